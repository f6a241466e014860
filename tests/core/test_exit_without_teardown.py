"""end_without_teardown(exit_handlers=True), which `rcompat doctor` asks for once its report is written:
run as the program, the atexit callbacks run, the streams are flushed and the process ends with the
command's code, before main() returns; with another thread still running, or called in-process, it
returns as before."""
from __future__ import annotations

import subprocess
import sys

PROGRAM = """
import atexit, sys, threading
atexit.register(sys.stderr.write, "atexit ran;")
from rcompat.cli.common import end_without_teardown, exit_if_asked
if sys.argv[1] == "thread":
    stop = threading.Event()
    threading.Thread(target=stop.wait).start()
end_without_teardown(["kept"], exit_handlers=True)
sys.stdout.write("written;")
exit_if_asked(3, as_program=sys.argv[1] != "in-process")
sys.stderr.write("returned;")
if sys.argv[1] == "thread":
    stop.set()
"""


def _run(mode: str) -> tuple[int, str, str]:
    done = subprocess.run([sys.executable, "-c", PROGRAM, mode], capture_output=True, text=True, timeout=60)
    return done.returncode, done.stdout, done.stderr


def test_exit_handlers_run_then_the_process_ends_with_the_code():
    assert _run("program") == (3, "written;", "atexit ran;")


def test_another_thread_or_an_in_process_caller_returns_as_before():
    assert _run("thread") == (0, "written;", "returned;atexit ran;")
    assert _run("in-process") == (0, "written;", "returned;atexit ran;")



def test_the_command_line_doctor_runs_without_the_cyclic_collector_and_gives_it_back(monkeypatch, capsys):
    """`rcompat doctor` turns Python's cyclic collector off for its run (rcompat.cli.doctor_cmd) and on
    again after, so an in-process caller (tests, the R package) keeps its own setting."""
    import gc

    from rcompat import areas
    from rcompat.cli.main import main
    from rcompat.model import Report

    during = []

    def fake_run_doctor(*args, **kwargs):
        during.append(gc.isenabled())
        return Report(command="doctor")

    monkeypatch.setattr(areas, "run_doctor", fake_run_doctor)
    assert gc.isenabled()
    assert main(["doctor", "--format", "json", "--quiet"]) == 0
    assert during == [False] and gc.isenabled()
    assert '"command": "doctor"' in capsys.readouterr().out
