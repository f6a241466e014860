"""SIGTERM and SIGHUP end every long command as Ctrl-C does: exit 128 + the signal, children killed,
temporary roots and directories removed. Real CLI processes get real signals mid-run (once the
temporary directory or the child they are waiting for exists); every process they start carries a
marker in its environment, so a survivor is found wherever it was re-parented."""
from __future__ import annotations

import importlib.util
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MARK = "RCOMPAT_SIGNAL_TEST_MARK"
SIGNALS = [pytest.param(signal.SIGTERM, id="SIGTERM"), pytest.param(signal.SIGHUP, id="SIGHUP")]


class Run:
    """One `rcompat` process with a private TMPDIR (`scratch`) and a marker its descendants inherit."""

    def __init__(self, tmp_path: Path, *args: str) -> None:
        self.scratch = tmp_path / "scratch"
        self.scratch.mkdir()
        self.mark = uuid.uuid4().hex
        env = {**os.environ, "TMPDIR": str(self.scratch), MARK: self.mark}
        env.pop("NO_COLOR", None)
        self.proc = subprocess.Popen([sys.executable, "-m", "rcompat", *args], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True, env=env,
                                     cwd=str(REPO))

    def descendants(self) -> list[int]:
        """Live processes carrying this run's marker, the rcompat process itself left out."""
        token = f"{MARK}={self.mark}".encode()
        found = []
        for entry in os.listdir("/proc"):
            if not entry.isdigit() or int(entry) == self.proc.pid:
                continue
            try:
                environ = Path(f"/proc/{entry}/environ").read_bytes()
            except OSError:  # gone, or a zombie
                continue
            if token in environ.split(b"\0"):
                found.append(int(entry))
        return found

    def temp_dirs(self, prefix: str) -> list[str]:
        return sorted(name for name in os.listdir(self.scratch) if name.startswith(prefix))

    def wait_until(self, what: str, condition, timeout: float = 120.0) -> None:
        deadline = time.monotonic() + timeout
        while not condition():
            if self.proc.poll() is not None:
                out, err = self.proc.communicate()
                pytest.fail(f"rcompat ended (exit {self.proc.returncode}) before {what}:\n{err[-2000:]}")
            if time.monotonic() > deadline:
                self.proc.kill()
                self.proc.communicate()
                pytest.fail(f"{what} did not happen within {timeout:.0f} s")
            time.sleep(0.02)

    def end_with(self, signum: int, timeout: float = 60.0) -> str:
        """Send `signum`, wait for the exit; rcompat's stderr. Asserts exit 128 + signum within `timeout`."""
        self.proc.send_signal(signum)
        start = time.monotonic()
        _, err = self.proc.communicate(timeout=timeout)
        took = time.monotonic() - start
        assert self.proc.returncode == 128 + signum, (self.proc.returncode, err[-2000:])
        assert f"terminated by {signal.Signals(signum).name}" in err
        assert "Traceback" not in err
        assert took < 30, f"rcompat took {took:.1f} s to stop"
        return err

    def assert_nothing_left(self) -> None:
        deadline = time.monotonic() + 5  # SIGKILLed groups vanish within moments of the exit
        while self.descendants() and time.monotonic() < deadline:
            time.sleep(0.05)
        survivors = {pid: _cmdline(pid) for pid in self.descendants()}
        for pid in survivors:
            os.kill(pid, signal.SIGKILL)
        assert not survivors, f"processes outlived rcompat: {survivors}"
        assert os.listdir(self.scratch) == [], "temporary files left behind"


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "?"


def _cpu_s(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _needs(*modules: str) -> None:
    for module in modules:
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} not installed (make test installs it into .venv)")


@pytest.mark.parametrize("signum", SIGNALS)
def test_doctor_kills_its_children_and_removes_their_directories(tmp_path, signum):
    run = Run(tmp_path, "doctor", "--no-cache", "--quiet")
    run.wait_until("a child process and its directory exist",
                   lambda: run.temp_dirs("rcompat-child-") and run.descendants())
    run.end_with(signum)
    run.assert_nothing_left()


@pytest.mark.parametrize("signum", SIGNALS)
def test_race_kills_the_trial_child(tmp_path, signum):
    _needs("rpy2", "torch")
    run = Run(tmp_path, "race", "--device", "cpu", "--mode", "serialized", "--trials", "5",
              "--iterations", "400", "--quiet")
    run.wait_until("a trial child has loaded R or torch (0.5 s of CPU)",
                   lambda: any(_cpu_s(pid) >= 0.5 for pid in run.descendants()))
    run.end_with(signum)
    run.assert_nothing_left()


def test_parity_record_kills_its_child_and_writes_no_record(tmp_path):
    _needs("torch", "numpy")
    output = tmp_path / "rec.npz"
    run = Run(tmp_path, "parity", "record", "--output", str(output), "--quiet")
    run.wait_until("the child runs in its work directory",
                   lambda: run.temp_dirs("rcompat-parity-") and run.descendants())
    run.end_with(signal.SIGTERM)
    run.assert_nothing_left()
    assert not output.exists() and os.listdir(tmp_path) == ["scratch"]


@pytest.fixture(scope="module")
def big_image(tmp_path_factory, gcc, load_helper):
    """An image whose merge takes a while: three layers of 1,500 small shared objects each."""
    images = load_helper("upgrade_images", REPO / "tests/upgrade/_images.py")
    out = tmp_path_factory.mktemp("signal-image")
    lib = out / "libleaf.so"
    subprocess.run([gcc, "-shared", "-fPIC", "-O1", "-o", str(lib), str(REPO / "fixtures/elf/leaf.c")], check=True)
    layers = [images.write_layer(out / f"l{n}.tar", [images.file(f"usr/lib/l{n}/lib{i}.so", lib, 0o755)
                                                      for i in range(1500)])
              for n in range(3)]
    return images.docker_save(out / "img.tar", [(layers, {"PATH": "/usr/bin"}, ["big:1"])])


@pytest.mark.parametrize("signum", SIGNALS)
def test_upgrade_removes_its_temporary_root(tmp_path, big_image, signum):
    run = Run(tmp_path, "upgrade", str(big_image), str(big_image), "--driver", "550.54.14", "--quiet")
    run.wait_until("the temporary root holds files",
                   lambda: any(os.listdir(run.scratch / d) for d in run.temp_dirs("rcompat-root-")))
    run.end_with(signum)
    run.assert_nothing_left()


def test_upgrade_with_extract_removes_what_it_extracted(tmp_path, big_image):
    target = tmp_path / "extracted"
    run = Run(tmp_path, "upgrade", str(big_image), str(big_image), "--extract", str(target), "--driver", "550.54.14",
              "--quiet")
    run.wait_until("DIR/old holds files", lambda: (target / "old" / "usr").exists())
    run.end_with(signal.SIGTERM)
    run.assert_nothing_left()
    assert not target.exists()


def test_an_ignored_sighup_stays_ignored(tmp_path):
    """`nohup rcompat …`: SIGHUP is ignored before rcompat starts, and rcompat keeps it that way."""
    script = ("import signal, sys; signal.signal(signal.SIGHUP, signal.SIG_IGN); "
              "from rcompat.termination import terminating_signals_interrupt; "
              "ctx = terminating_signals_interrupt(); ctx.__enter__(); "
              "print(signal.getsignal(signal.SIGHUP) is signal.SIG_IGN, "
              "signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN))")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=str(REPO), timeout=60)
    assert out.stdout.split() == ["True", "True"], out.stderr


def test_a_signal_inside_importlib_is_raised_once_the_main_thread_has_left_it():
    """Raised in importlib's own code, Terminated could leave the global import lock held: every other
    thread's next import hung, and the doctor with them (1 SIGHUP in ~20). There the handler sends the
    signal again instead, and it is raised in the main thread's own code; elsewhere it is raised at once."""
    import importlib._bootstrap as bootstrap

    from rcompat.termination import Terminated, terminating_signals_interrupt

    import_frame = bootstrap._call_with_frames_removed(lambda: sys._getframe(1))
    assert import_frame.f_code.co_filename.startswith("<frozen importlib")
    with terminating_signals_interrupt():
        handler = signal.getsignal(signal.SIGTERM)
        with pytest.raises(Terminated):
            try:
                handler(signal.SIGTERM, import_frame)  # not raised here: delivered again
            except Terminated:
                pytest.fail("Terminated raised inside importlib's code")
            deadline = time.monotonic() + 30  # a bound only: the signal comes again after 5 ms
            while time.monotonic() < deadline:
                time.sleep(0.01)
    with terminating_signals_interrupt():
        with pytest.raises(Terminated):
            signal.getsignal(signal.SIGTERM)(signal.SIGTERM, sys._getframe())


@pytest.mark.parametrize("signum, raised", [(signal.SIGTERM, "Terminated"), (signal.SIGINT, "KeyboardInterrupt")])
def test_a_signal_in_a_held_block_is_handled_when_the_block_ends(signum, raised):
    """rcompat.termination.signals_held: the doctor starts a thread and records it in one held block,
    so an interrupt never leaves a running thread out of those it waits for (Thread.start() waits for
    the thread to run; a SIGHUP in that wait left rcompat-child-* behind, ~1 doctor in 10)."""
    import threading

    from rcompat.termination import signals_held, terminating_signals_interrupt

    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signal handlers are the main thread's; this test runs elsewhere")
    before = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    ran = []
    with terminating_signals_interrupt():
        handlers = {s: signal.getsignal(s) for s in before}
        with pytest.raises(KeyboardInterrupt) as caught:
            with signals_held():
                signal.raise_signal(signum)
                for _ in range(1000):   # bytecodes: an unheld handler would have raised among them
                    ran.append(None)
                ran.append("end")
        assert {s: signal.getsignal(s) for s in before} == handlers   # the block's own handlers put back
    assert type(caught.value).__name__ == raised and ran[-1] == "end"
    assert {s: signal.getsignal(s) for s in before} == before
