import os
import signal
import sys
import time

from rcompat.isolate import child_failure, run_child


def test_json_lines_and_last_step_are_parsed():
    code = ("import json,sys;print(json.dumps({'step':'load'}));print('noise');"
            "print(json.dumps({'step':'compute','value':3}));sys.exit(0)")
    res = run_child([sys.executable, "-c", code], timeout=30)
    assert res.ok and res.last_step == "compute" and res.records[-1]["value"] == 3


def test_signal_death_is_named():
    code = "import json,os,signal;print(json.dumps({'step':'crash-here'}),flush=True);os.kill(os.getpid(),signal.SIGSEGV)"
    res = run_child([sys.executable, "-c", code], timeout=30)
    assert res.signal == signal.SIGSEGV and res.signal_name == "SIGSEGV"
    finding = child_failure(res, id="T-CRASH", area="t", what="test child", remedy="none")
    assert finding.status.value == "fail" and "SIGSEGV" in finding.title and "crash-here" in finding.message


def test_hang_is_killed_with_its_grandchildren(tmp_path):
    pidfile = tmp_path / "grandchild.pid"
    code = (f"import subprocess,sys,time;p=subprocess.Popen([sys.executable,'-c','import time;time.sleep(60)']);"
            f"open({str(pidfile)!r},'w').write(str(p.pid));time.sleep(60)")
    start = time.monotonic()
    res = run_child([sys.executable, "-c", code], timeout=2)
    assert res.timed_out and time.monotonic() - start < 20
    grandchild = int(pidfile.read_text())

    def alive() -> bool:
        try:
            return open(f"/proc/{grandchild}/stat").read().rsplit(")", 1)[1].split()[0] != "Z"
        except (ProcessLookupError, FileNotFoundError):
            return False

    deadline = time.monotonic() + 30  # SIGKILL is delivered asynchronously: wait for it, don't guess
    while alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not alive(), "the grandchild outlived the timeout"


def test_missing_program_is_a_result_not_an_exception():
    res = run_child(["/nonexistent/program"], timeout=5)
    assert res.returncode == 127 and "cannot start" in res.stderr


def test_a_killed_r_child_leaves_no_temporary_directory_behind():
    """R makes /tmp/RtmpXXXXXX per session and removes it only on a clean exit: a child killed at its
    timeout (or on a SIGSEGV) must not leave one per run. The child's TMPDIR is its own, removed after."""
    import shutil as _shutil

    rscript = _shutil.which("Rscript")
    if rscript is None:
        import pytest

        pytest.skip("Rscript is not installed")
    result = run_child([rscript, "-e", "cat(tempdir(), '\\n', sep = ''); flush(stdout()); Sys.sleep(60)"], timeout=3)
    assert result.timed_out
    r_tmp = result.stdout.strip().splitlines()[0]
    assert os.path.basename(r_tmp).startswith("Rtmp")
    assert os.path.basename(os.path.dirname(r_tmp)).startswith("rcompat-child-")
    assert not os.path.exists(r_tmp) and not os.path.exists(os.path.dirname(r_tmp))


def test_a_caller_s_tmpdir_is_kept():
    result = run_child([sys.executable, "-c", "import os; print(os.environ['TMPDIR'])"], timeout=30,
                       env={"TMPDIR": "/var/tmp"})
    assert result.stdout.strip() == "/var/tmp"


def test_another_interpreter_gets_rcompat_but_not_this_environment_s_packages(tmp_path, monkeypatch):
    """--python OTHER: the directory rcompat lives in (site-packages, for a normal install) must not
    reach the other interpreter's path, or it would run this environment's numpy and torch."""
    from pathlib import Path

    from rcompat.isolate import run_python_child

    here = str(Path(__import__("rcompat").__file__).resolve().parents[1])
    # The interpreter this venv was made from: it has none of the venv's .pth files (an editable install
    # in `compat` mode puts the checkout on the venv's own path, as site-packages is for a normal one)
    other = getattr(sys, "_base_executable", sys.executable)
    monkeypatch.chdir(tmp_path)  # `python -m` puts the working directory first on sys.path
    listing = run_python_child("site", timeout=60, python=other)
    assert listing.returncode == 0, listing.stderr
    assert f"'{here}'," not in listing.stdout
    version = run_python_child("rcompat.cli.main", ["--version"], timeout=60, python=other)
    assert version.returncode == 0 and version.stdout.startswith("rcompat "), version.stderr
    same = run_python_child("site", timeout=60)  # this interpreter: the package's directory comes first
    assert f"'{here}'," in same.stdout



def test_a_child_tmpdir_still_written_by_its_dying_session_is_removed_once_the_session_is_gone(tmp_path):
    """After a kill the child is reaped, but processes it started may still be exiting and writing into
    its TMPDIR: a removal that races them leaves the directory (rmtree's last rmdir meets new files).
    The removal waits for the child's session to be empty and removes again. Here the child has ended
    and left a grandchild writing in its session, which is killed 0.3 s into the removal."""
    import subprocess
    import threading

    from rcompat.isolate import _remove_private_tmp
    from rcompat.reaping import running_session_members

    private = tmp_path / "rcompat-child-x"
    private.mkdir()
    child = subprocess.Popen(["sh", "-c", '(i=0; while :; do i=$((i+1)); : > "$TMPDIR/f$i"; done) & exit 0'],
                             env={**os.environ, "TMPDIR": str(private)}, start_new_session=True)
    child.wait()
    try:
        while not any(private.iterdir()):  # an event: the grandchild is writing
            time.sleep(0.01)
        assert running_session_members(child.pid)
        killer = threading.Timer(0.3, os.killpg, (child.pid, signal.SIGKILL))
        killer.start()
        _remove_private_tmp(str(private), [child.pid])
        killer.join()
        assert not running_session_members(child.pid)
        assert not private.exists()
    finally:
        try:
            os.killpg(child.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def test_a_childs_scheduling_group_takes_the_nice_value_of_the_thread_that_starts_it():
    """Each child starts a session, which the kernel's autogroup makes a scheduling group of its own:
    without its group niced, a child started from a nice thread competed as an equal (rcompat.areas
    .BACKGROUND_NICE, the doctor's early facts). A thread at nice 0 leaves its children's groups at 0."""
    import threading

    import pytest

    if not os.path.exists("/proc/self/autogroup"):
        pytest.skip("this kernel has no autogroup (CONFIG_SCHED_AUTOGROUP): nothing to set")
    seen = {}

    def start(nice):
        if nice:
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), nice)  # this thread only
        # the child reads its group once its input arrives: the parent writes it after setting the group
        result = run_child(["sh", "-c", "read line && cat /proc/self/autogroup"], timeout=30, stdin="go\n")
        seen[nice] = (result.ok, result.stdout.split()[-1] if result.stdout.split() else result.describe_end())

    for nice in (0, 7):
        thread = threading.Thread(target=start, args=(nice,))
        thread.start()
        thread.join(60)
    own = open("/proc/self/autogroup").read().split()
    assert seen == {0: (True, "0"), 7: (True, "7")}, (seen, own)
