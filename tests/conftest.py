"""Shared test fixtures: real tools only. Engine-specific fixtures live in tests/<engine>/conftest.py."""
from __future__ import annotations

import os
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


def tests_cache_dir() -> Path:
    """Where test artefacts are kept between runs: $RCOMPAT_TESTS_CACHE, else rcompat-tests/ in the
    user's cache directory ($XDG_CACHE_HOME or ~/.cache), as fixtures/upgrade/build.py and the
    benchmarks use it. Read before private_cache_dir replaces XDG_CACHE_HOME for the session. The same
    rule as build.py's cache_dir(), written here again on purpose: this file must run on its own
    (tests/core/test_xdist_groups.py copies it over a bare tree), and build.py is a standalone script."""
    if os.environ.get("RCOMPAT_TESTS_CACHE"):
        return Path(os.environ["RCOMPAT_TESTS_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "rcompat-tests"


@pytest.fixture(scope="session", autouse=True)
def private_cache_dir(tmp_path_factory):
    """rcompat's caches (symbol indexes, torch facts) go to a directory of this test session, never
    the user's ~/.cache: each session starts cold and leaves nothing behind. The CLI children inherit
    it through the environment. Test artefacts that stay the same from run to run (wheel members,
    fixture builds keyed by their inputs) are kept in the user's cache, named by RCOMPAT_TESTS_CACHE."""
    previous = os.environ.get("XDG_CACHE_HOME")
    os.environ.setdefault("RCOMPAT_TESTS_CACHE", str(tests_cache_dir()))
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


def built_once(tmp_path_factory, name: str, build, inputs: "list[str | Path] | None" = None):
    """`build(directory)` run once for the whole test run, not once per xdist worker: the first worker
    to need it builds under an exclusive lock in a directory all workers of this run share (pytest's
    base temporary directory); the others wait for the lock and take the result. `build` returns what
    the fixture gives (JSON data; Path values are kept as paths). A build that fails or skips leaves
    nothing, so the next worker tries again and fails or skips the same way. For fixtures the tests
    only read: R libraries installed with R CMD INSTALL, an R CMD check, records of a torch child.

    `inputs` (files, directories and strings such as a tool's version): the build is kept between
    runs, in tests_cache_dir()/once/NAME-KEY, KEY a digest of every input's bytes; a change to any
    of them builds afresh. Only for builds of fixtures that are not under test (R CMD INSTALL of the
    stand-in packages), never for a result a test asserts on."""
    import fcntl
    import json

    if inputs is None:
        base = tmp_path_factory.getbasetemp()
        shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
        stem = f"once-{name}"
    else:
        shared = tests_cache_dir() / "once"
        shared.mkdir(parents=True, exist_ok=True)
        stem = f"{name}-{_digest(inputs)}"
    directory, done = shared / stem, shared / f"{stem}.json"
    with open(shared / f"{stem}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists() and directory.is_dir():
            return json.loads(done.read_text(), object_hook=_decode_paths)
        done.unlink(missing_ok=True)
        shutil.rmtree(directory, ignore_errors=True)  # an attempt that failed
        directory.mkdir()
        result = build(directory)
        done.write_text(json.dumps(result, default=_encode_path))
        return result


def _digest(inputs: "list[str | Path]") -> str:
    """sha256 (16 hex digits) of the inputs: a Path's files (names and bytes, in order), a str as is."""
    import hashlib

    digest = hashlib.sha256()
    for item in inputs:
        if isinstance(item, Path):
            files = sorted(p for p in item.rglob("*") if p.is_file()) if item.is_dir() else [item]
            for f in files:
                digest.update(f"\0file {f.relative_to(item) if item.is_dir() else f}\0".encode())
                digest.update(f.read_bytes())
        else:
            digest.update(f"\0str {item}\0".encode())
    return digest.hexdigest()[:16]


@pytest.fixture(scope="session")
def r_identity() -> str:
    """Which R installs the fixture packages: its front end and `R --version` (a fixture library built
    by one R is rebuilt for another)."""
    r = shutil.which("R")
    if not r:
        return "no R"
    proc = subprocess.run([r, "--version"], capture_output=True, text=True, timeout=60)
    return f"{os.path.realpath(r)}\n{proc.stdout}"


@pytest.fixture(scope="session")
def build_once(tmp_path_factory):
    """built_once(tmp_path_factory, name, build, inputs=None) for fixtures in other conftests."""
    return lambda name, build, inputs=None: built_once(tmp_path_factory, name, build, inputs)


@pytest.fixture(scope="session")
def torch_parity_lib(build_once, r_identity) -> Path:
    """An R library holding the plain-R stand-in for R torch (fixtures/rpkgs/torch-parity) as package
    `torch`, installed by R CMD INSTALL once for all workers (the parity and soak tests read it)."""
    def install(root: Path) -> Path:
        stage = root / "stage" / "torch"
        shutil.copytree(FIXTURES / "rpkgs" / "torch-parity", stage)
        return r_cmd_install(root / "lib", stage)

    return build_once("torch-parity-lib", install,
                      inputs=[FIXTURES / "rpkgs" / "torch-parity", Path(__file__), r_identity])


def _encode_path(value):
    if isinstance(value, Path):
        return {"__path__": str(value)}
    raise TypeError(f"built_once results are JSON data and paths, not {type(value).__name__}")


def _decode_paths(obj: dict):
    return Path(obj["__path__"]) if set(obj) == {"__path__"} else obj


# -- the parallel run (pytest-xdist, `make test`) ----------------------------------------------------
# Tests are independent unless marked: `tier` tests share the Debian root and run one after another on
# one worker; `serial` tests own another machine-wide resource (daemons, a CPU they load on purpose)
# and do the same on a worker of their own. A test using a module-scoped fixture (or a session-scoped
# one its module defines) goes with the rest of its module (one group per module), so the fixture is
# made once, not once per worker that happens to get one of the module's tests. xdist reads the xdist_group marks in its own
# pytest_collection_modifyitems, a plain hook (pytest-xdist 3.8), so these marks must come first:
# tryfirst. tests/tier/conftest.py marks its tests `tier` in a tryfirst hook too; it registers later,
# so pluggy calls it before this one. tests/core/test_xdist_groups.py checks this in a real run (with
# trylast, as before, no group formed: the tier ran on both workers, building its venvs twice).
# Order: xdist hands out the groups in the order of their first test (pytest_configure turns off its
# reordering by size), so the tier's chain, the longest, starts at once on one worker and the serial
# group on the other; then the module groups; single tests last fill the gaps.
ORDER = {"tier": 0, "serial": 1, "module": 2}
LONGEST_ID_VALUE = 100  # characters of a str/bytes parameter spelled out in a test's id


def pytest_make_parametrize_id(config, val, argname):
    """A long str/bytes parameter (a hostile 200 KB document) is named by its argument and length, as
    pytest >= 9.2 does on its own: spelled out, the id went into PYTEST_CURRENT_TEST, and every child
    the test started failed with E2BIG (an environment string over 128 KB)."""
    if isinstance(val, (str, bytes)) and len(val) > LONGEST_ID_VALUE:
        return f"{argname}-{len(val)}-long"
    return None


def pytest_configure(config):
    if hasattr(config.option, "loadscopereorder"):  # pytest-xdist present
        config.option.loadscopereorder = False


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    rank = {}
    for item in items:
        group = next((g for g in ("tier", "serial") if item.get_closest_marker(g)), None)
        if group is None and _uses_a_module_fixture(item):
            group = "module"
            item.add_marker(pytest.mark.xdist_group(f"module:{item.nodeid.split('::')[0]}"))
        elif group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
        rank[item] = ORDER.get(group, 3)
    items.sort(key=rank.__getitem__)  # stable: collection order within each rank


def _uses_a_module_fixture(item) -> bool:
    """A module-scoped fixture, or a session-scoped one defined in the test's own module (only that
    module's tests use it)."""
    module = item.nodeid.split("::")[0]
    defs = getattr(getattr(item, "_fixtureinfo", None), "name2fixturedefs", {})
    return any(fixturedefs and (fixturedefs[-1].scope == "module"
                                or fixturedefs[-1].scope == "session" and fixturedefs[-1].baseid == module)
               for fixturedefs in defs.values())
