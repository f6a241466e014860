"""Shared test fixtures: real tools only. Engine-specific fixtures live in tests/<engine>/conftest.py."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"


def run_cli(*args: str, timeout: float = 300, env: dict | None = None,
            input: str | None = None) -> subprocess.CompletedProcess:
    """Run the real `rcompat` CLI in a fresh interpreter, as a user would (`input`: text piped to stdin)."""
    import os

    full_env = dict(os.environ)
    full_env.pop("NO_COLOR", None)
    if env:
        full_env.update(env)
    return subprocess.run([sys.executable, "-m", "rcompat", *args], capture_output=True, text=True,
                          timeout=timeout, env=full_env, cwd=str(REPO), input=input)


def run_cli_on_tty(*args: str, timeout: float = 300, env: dict | None = None) -> tuple[int, bytes, str]:
    """Run the CLI with stderr on a real pseudo-terminal and stdout on a pipe, as in a terminal with
    `> file`: (exit code, stdout bytes, everything written to the terminal)."""
    import fcntl
    import os
    import pty
    import struct
    import termios
    import threading

    full_env = dict(os.environ)
    full_env.pop("NO_COLOR", None)
    full_env.update(env or {})
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 200, 0, 0))  # rows, columns
    seen: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(master, 4096)
            except OSError:  # EIO: every holder of the terminal's other end has closed it
                return
            if not chunk:
                return
            seen.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "rcompat", *args], stdout=subprocess.PIPE,
                                stderr=slave, stdin=subprocess.DEVNULL, env=full_env, cwd=str(REPO))
        os.close(slave)
        out, _ = proc.communicate(timeout=timeout)
        reader.join(timeout=10)
    finally:
        os.close(master)
    return proc.returncode, out, b"".join(seen).decode("utf-8", "replace")


@pytest.fixture
def tty_cli():
    return run_cli_on_tty


@pytest.fixture(scope="session", autouse=True)
def private_cache_dir(tmp_path_factory):
    """rcompat's caches (symbol indexes, torch facts) go to a directory of this test session, never
    the user's ~/.cache: each session starts cold and leaves nothing behind. The CLI children inherit
    it through the environment."""
    import os

    previous = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg-cache"))
    yield Path(os.environ["XDG_CACHE_HOME"])
    if previous is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = previous


@pytest.fixture
def cli():
    return run_cli


def load_module(name: str, path: Path):
    """Import a helper module by path: fixtures/*/build.py and tests/*/_*.py are not packages (the
    tests run with --import-mode=importlib)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def r_cmd_install(lib: Path, *package_dirs: "str | Path") -> Path:
    """`R CMD INSTALL` the fixture package directories into `lib` (made here); skip without R."""
    r = shutil.which("R")
    if not r or not shutil.which("Rscript"):
        pytest.skip("R not installed (make test installs r-base-core)")
    lib.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([r, "CMD", "INSTALL", "--no-docs", "--no-multiarch", "-l", str(lib),
                           *map(str, package_dirs)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"R CMD INSTALL into {lib} failed:\n{proc.stdout}\n{proc.stderr}"
    return lib


@pytest.fixture(scope="session")
def r_install():
    return r_cmd_install


@pytest.fixture(scope="session")
def load_helper():
    return load_module


@pytest.fixture(scope="session")
def gcc() -> str:
    path = shutil.which("gcc")
    if not path:
        pytest.skip("gcc not installed (make test installs it with build-essential)")
    return path


@pytest.fixture(scope="session")
def rscript() -> str:
    path = shutil.which("Rscript")
    if not path:
        pytest.skip("Rscript not installed (make test installs r-base-core)")
    return path


def build_wheel(dest: Path) -> Path:
    """A wheel of this checkout as it is now (tracked and new files, not ignored ones), built from a
    copy under dest so the checkout gets no build/ or egg-info."""
    src = dest / "src"
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO,
                            capture_output=True, text=True)
    if listed.returncode != 0:   # not a git checkout (an unpacked copy): everything but build output
        shutil.copytree(REPO, src, ignore=shutil.ignore_patterns(".venv", "build", "*.egg-info", "__pycache__",
                                                                 ".pytest_cache", ".git"))
    for name in filter(None, listed.stdout.split("\0") if listed.returncode == 0 else []):
        if (REPO / name).is_file():
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, src / name)
    proc = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                           "-w", str(dest / "wheels"), str(src)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"building rcompat's wheel failed:\n{proc.stdout}\n{proc.stderr}"
    return next((dest / "wheels").glob("rcompat-*.whl"))


@pytest.fixture(scope="session")
def wheel_builder():
    return build_wheel


# -- the parallel run (pytest-xdist, `make test`) ----------------------------------------------------
# Tests are independent unless marked: `tier` tests share the Debian root and run one after another on
# one worker; `serial` tests own another machine-wide resource (daemons, a CPU they load on purpose)
# and do the same on a worker of their own. xdist reads the xdist_group marks in its own
# pytest_collection_modifyitems, a plain hook (pytest-xdist 3.8), so these marks must come first:
# tryfirst. tests/tier/conftest.py marks its tests `tier` in a tryfirst hook too; it registers later,
# so pluggy calls it before this one. tests/core/test_xdist_groups.py checks the order in a real run
# (with trylast, as before, the groups were never formed: the tier ran on both workers, building its
# venvs twice, and the tests that load a CPU on purpose ran beside others).
# Scheduling: --dist loadgroup hands out the largest group first (xdist's loadscope reordering), so
# the tier's chain of tests, the longest one, starts at once and overlaps everything else.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    for item in items:
        for group in ("tier", "serial"):
            if item.get_closest_marker(group):
                item.add_marker(pytest.mark.xdist_group(group))
                break
