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
    time.sleep(0.2)
    try:
        os.kill(grandchild, 0)
        alive = open(f"/proc/{grandchild}/stat").read().split()[2] != "Z"
    except (ProcessLookupError, FileNotFoundError):
        alive = False
    assert not alive, "the grandchild outlived the timeout"


def test_missing_program_is_a_result_not_an_exception():
    res = run_child(["/nonexistent/program"], timeout=5)
    assert res.returncode == 127 and "cannot start" in res.stderr
