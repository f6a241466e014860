"""scripts/debian_root.py: the mirror apt uses, the suite, the cache key, and commands in the root
leaving nothing mounted whatever way they end."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def host_mounts_under(root: Path) -> list[str]:
    return [line for line in Path("/proc/mounts").read_text().splitlines() if str(root) in line]


def test_mirror_from_deb822_and_one_line_sources(debian_root, tmp_path, monkeypatch):
    monkeypatch.delenv("RCOMPAT_TIER_MIRROR", raising=False)
    monkeypatch.setattr(debian_root, "host_codename", lambda: "bookworm")
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list.d" / "debian.sources").write_text(textwrap.dedent("""\
        Types: deb
        URIs: http://deb.debian.org/debian-security
        Suites: bookworm-security
        Components: main

        Types: deb
        # a comment line
        URIs: http://mirror.example/debian
        Suites: bookworm bookworm-updates
        Components: main
        """))
    (tmp_path / "sources.list.d" / "other.list").write_text(
        "deb [arch=amd64 signed-by=/k.gpg] https://apt.example/repo stable main\n")
    assert debian_root.apt_mirror(tmp_path) == "http://mirror.example/debian"
    (tmp_path / "sources.list.d" / "debian.sources").unlink()
    (tmp_path / "sources.list").write_text("# deb http://old/ bookworm main\n"
                                           "deb http://one.line/debian bookworm main\n")
    assert debian_root.apt_mirror(tmp_path) == "http://one.line/debian"


def test_no_mirror_is_a_stated_reason(debian_root, tmp_path, monkeypatch):
    monkeypatch.delenv("RCOMPAT_TIER_MIRROR", raising=False)
    (tmp_path / "sources.list.d").mkdir()
    with pytest.raises(debian_root.RootUnavailable, match="no Debian mirror found"):
        debian_root.apt_mirror(tmp_path)


def test_auto_suite_is_the_other_release(debian_root, tmp_path, monkeypatch):
    for codename, other in (("bookworm", "trixie"), ("trixie", "bookworm")):
        monkeypatch.setattr(debian_root, "host_codename", lambda c=codename: c)
        assert debian_root.resolve_suite("auto") == other
    monkeypatch.setattr(debian_root, "host_codename", lambda: "jammy")
    with pytest.raises(debian_root.RootUnavailable, match="not Debian 12 or 13"):
        debian_root.resolve_suite("auto")


def test_key_follows_the_package_list(debian_root, monkeypatch):
    before = debian_root.root_key("trixie")
    monkeypatch.setattr(debian_root, "PACKAGES", (*debian_root.PACKAGES, "r-cran-foo"))
    assert debian_root.root_key("trixie") != before
    assert debian_root.root_key("bookworm") != debian_root.root_key("trixie")


def test_not_root_skips_with_reason(debian_root, monkeypatch):
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with pytest.raises(debian_root.RootUnavailable, match="not root"):
        debian_root.check_can_build("http://deb.debian.org/debian", "trixie")
    with pytest.raises(debian_root.RootUnavailable, match="not root"):
        debian_root.ensure_root("trixie")   # a cached root cannot be entered either


def test_incomplete_root_is_refused(debian_root, tmp_path):
    (tmp_path / "half" / "usr").mkdir(parents=True)
    with pytest.raises(debian_root.RootError, match="not a complete rcompat root"):
        debian_root.run_in_root(tmp_path / "half", ["true"])


def test_failing_command_leaves_nothing_mounted(debian_root, tier_root, tmp_path):
    (tmp_path / "marker").write_text("seen through the bind\n")
    proc = debian_root.run_in_root(tier_root, ["sh", "-c", "cat /mnt/x/marker; grep -c ' /proc ' /proc/mounts; "
                                               "ls /dev/null; exit 7"], binds={str(tmp_path): "/mnt/x"})
    assert proc.returncode == 7, proc.stderr
    assert proc.stdout.splitlines()[:3] == ["seen through the bind", "1", "/dev/null"]
    assert host_mounts_under(tier_root) == []


def test_read_only_bind_reads_but_refuses_writes(debian_root, tier_root, tmp_path):
    """How the race tier lends the host's Python to the root: readable, never written."""
    (tmp_path / "marker").write_text("read-only\n")
    proc = debian_root.run_in_root(tier_root, ["sh", "-c", "cat /mnt/ro/marker; touch /mnt/ro/new"],
                                   read_only_binds={str(tmp_path): "/mnt/ro"})
    assert proc.stdout == "read-only\n" and proc.returncode != 0 and "Read-only file system" in proc.stderr
    assert not (tmp_path / "new").exists()
    assert host_mounts_under(tier_root) == []


def test_crash_and_timeout_leave_nothing_mounted(debian_root, tier_root):
    proc = debian_root.run_in_root(tier_root, ["Rscript", "-e", "invisible(.Call('R_nonexistent'))"])
    assert proc.returncode != 0 and "R_nonexistent" in proc.stderr
    segv = debian_root.run_in_root(tier_root, ["sh", "-c", "kill -SEGV $$"])
    assert segv.returncode != 0
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        debian_root.run_in_root(tier_root, ["sleep", "60"], timeout=2)
    assert time.monotonic() - started < 20
    assert host_mounts_under(tier_root) == []


def test_ctrl_c_and_sigterm_leave_nothing_mounted(tier_root):
    code = (f"import sys; sys.path.insert(0, {str(REPO / 'scripts')!r}); import debian_root; "
            f"debian_root.run_in_root({str(tier_root)!r}, ['sleep', '60'])")
    for sig in (signal.SIGINT, signal.SIGTERM):
        caller = subprocess.Popen([sys.executable, "-c", code], stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120   # until the command runs inside the root (any machine's speed)
        while not _sleeping_in_root() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _sleeping_in_root(), "the command never started inside the root"
        assert host_mounts_under(tier_root) == []   # the mounts are the command's namespace's only
        caller.send_signal(sig)
        caller.wait(timeout=60)
        deadline = time.monotonic() + 30   # the namespace's processes are killed asynchronously
        while _sleeping_in_root() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _sleeping_in_root()
        assert host_mounts_under(tier_root) == []


def _sleeping_in_root() -> bool:
    return any("sleep 60" in _cmdline(pid) for pid in os.listdir("/proc") if pid.isdigit())


def _cmdline(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def test_bad_bind_is_a_clear_error(debian_root, tier_root, tmp_path):
    with pytest.raises(debian_root.RootError, match="cannot bind .* no such file"):
        debian_root.run_in_root(tier_root, ["true"], binds={str(tmp_path / "missing"): "/mnt/x"})
    (tmp_path / "file").write_text("x")
    # a bind onto a path the root has as a file, not a directory: mount fails, said as such
    with pytest.raises(debian_root.RootError, match="cannot (enter|create|mount)"):
        debian_root.run_in_root(tier_root, ["true"], binds={str(tmp_path): "/etc/hostname/sub"})
    assert host_mounts_under(tier_root) == []


def test_failed_build_leaves_no_root_behind(debian_root, tmp_path, monkeypatch):
    """A build that fails half-way (here: the package install) leaves only its log; the next call
    builds again instead of taking the half-built directory."""
    monkeypatch.setenv("RCOMPAT_TIER_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("RCOMPAT_TIER_MIRROR", "http://mirror.invalid/debian")
    monkeypatch.setattr(debian_root, "check_can_build", lambda mirror, suite: None)
    calls = []

    def fake_retry(what, argv, log, **kw):
        calls.append(what)
        if what == "debootstrap":
            Path(argv[3], "etc").mkdir(parents=True)   # something half-built
            return None
        raise debian_root.RootError("E: Unable to fetch some archives")

    monkeypatch.setattr(debian_root, "_retry", fake_retry)
    for _ in range(2):
        with pytest.raises(debian_root.RootError, match="building the trixie root failed .*Unable to fetch"):
            debian_root.ensure_root("trixie")
    assert calls == ["debootstrap", "apt-get update"] * 2
    left = sorted(p.name for p in (tmp_path / "cache").iterdir())
    assert left == [f".{debian_root.cached_root_path('trixie').name}.lock",
                    f"{debian_root.cached_root_path('trixie').name}.log"]
