"""SIGTERM and SIGHUP end rcompat the way Ctrl-C does, so the same clean-up runs.

Python turns SIGINT into KeyboardInterrupt, and every clean-up in rcompat is a `finally` or a `with`
(children killed as a group by rcompat.isolate, temporary roots and directories removed). SIGTERM (a CI
runner cancelling a job, `timeout`, systemd) and SIGHUP (a closed terminal) kill the process by default,
running none of them: a temporary root of hundreds of MB and children in their own sessions were left
behind. Raising a KeyboardInterrupt subclass for them reuses that one clean-up path; the CLI turns it
into exit 128 + the signal number.
"""
from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (2 ms of every command's start-up)
if TYPE_CHECKING:
    from typing import Any, Callable

TERMINATING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """rcompat was asked to stop by `signum` (SIGTERM or SIGHUP)."""

    def __init__(self, signum: int) -> None:
        super().__init__(f"terminated by {signal.Signals(signum).name}")
        self.signum = signum


def exit_code(interrupt: KeyboardInterrupt) -> int:
    """128 + the signal number, as a shell reports a process ended by that signal (130 for Ctrl-C)."""
    return 128 + int(getattr(interrupt, "signum", signal.SIGINT))


@contextmanager
def terminating_signals_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM and SIGHUP raise Terminated in the main thread. Only the first
    one raises: a second signal arriving while the clean-up runs must not cut it short. A signal this
    process was told to ignore (`nohup` ignores SIGHUP) stays ignored; outside the main thread, where
    Python allows no handler, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    raised = False

    def handler(signum: int, frame) -> None:
        nonlocal raised
        if not raised:
            if _in_import_machinery(frame):  # raised there, it can leave the import lock held: every
                _deliver_again(signum)       # thread's next import then hangs, and so does the clean-up
                return
            raised = True
            raise Terminated(signum)

    previous = {}
    for signum in TERMINATING_SIGNALS:
        if signal.getsignal(signum) is not signal.SIG_IGN:
            previous[signum] = signal.signal(signum, handler)
    try:
        yield
    finally:
        for signum, old in previous.items():
            signal.signal(signum, old)


def _in_import_machinery(frame) -> bool:
    """Whether the main thread was running importlib's own code (between taking the global import lock
    and the `try` that releases it, say): a doctor interrupted there hung in 1 of ~20 SIGHUPs, its
    START threads waiting for that lock forever and the doctor joining them."""
    return frame is not None and frame.f_code.co_filename.startswith("<frozen importlib")


def _deliver_again(signum: int) -> None:
    """The same signal again in 5 ms, when the main thread has left importlib's code."""
    import os

    timer = threading.Timer(0.005, os.kill, (os.getpid(), signum))
    timer.daemon = True
    timer.start()


HELD_SIGNALS = (signal.SIGINT, *TERMINATING_SIGNALS)


@contextmanager
def signals_held() -> Iterator[None]:
    """In the main thread: SIGINT, SIGTERM and SIGHUP that arrive while the block runs are handled
    when it ends. Thread.start() waits for the new thread to run, and an interrupt raised in that wait
    left a started thread out of the list of threads to wait for: a doctor exited while such a START
    thread created its child's directory (rcompat-child-* left behind, 1 SIGHUP in ~10). The handlers
    are swapped for one that records, not the signal mask: another thread that does not block a
    signal takes it, and Python runs the handler in the main thread all the same."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = {}
    for signum in HELD_SIGNALS:
        if signal.getsignal(signum) not in (signal.SIG_IGN, None):  # ignored stays ignored
            previous[signum] = signal.signal(signum, lambda got, frame: caught.append(got))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        if caught:
            signal.raise_signal(caught[0])  # handled now, by the handler the block had replaced


def despite_interrupts(clean_up: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """Run `clean_up` to its end even when Ctrl-C or SIGTERM arrives meanwhile (removing a temporary
    root of hundreds of MB takes seconds, and a Ctrl-C there left it behind); the interrupt is raised
    again once it is done. `clean_up` must be safe to run again from the start (rmtree is)."""
    interrupted: KeyboardInterrupt | None = None
    while True:
        try:
            clean_up(*args, **kwargs)
            break
        except KeyboardInterrupt as exc:
            interrupted = interrupted or exc
    if interrupted is not None:
        raise interrupted
