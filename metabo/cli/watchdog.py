"""The last resort of a long command: Ctrl-C and a time budget end it even when the work
does not return to Python.

An interrupt (SIGINT) normally ends a command through ``KeyboardInterrupt``, and a time
budget through :func:`metabo.optimizer.budget.deadline`; both are raised at the next
Python instruction of the main thread, so one long call into a compiled library (a
parser, a solver) delays them until it returns. :func:`install` starts a daemon thread
that, whatever the main thread does:

- on SIGINT (seen through :func:`signal.set_wakeup_fd`, written by the C-level handler
  at once), waits :data:`INTERRUPT_GRACE` seconds for the command to end by itself,
  then kills this process's worker processes and exits with 130;
- :data:`BUDGET_GRACE` seconds after a time budget runs out, does the same with exit
  code 2 and an ``error:`` line.

What was committed to the knowledge base stays (every told trial is its own
transaction); a transaction under way is not committed. The thread needs the GIL,
which compiled libraries release during long work (NumPy, the CSV parser, DuckDB).
"""

from __future__ import annotations

import atexit
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time

#: seconds an interrupted command has to end by itself before it is ended
INTERRUPT_GRACE = 1.0
#: seconds past a time budget (after the library's own deadline) before it is ended
BUDGET_GRACE = 3.0


def _kill_children() -> None:
    """Kill this process's worker processes (forked evaluations, a loky pool)."""
    for child in multiprocessing.active_children():
        try:
            child.kill()
        except (OSError, ValueError):
            pass
    try:
        from joblib.externals.loky import reusable_executor

        executor = reusable_executor._executor
        for process in list(getattr(executor, "_processes", {}).values()) if executor is not None else []:
            process.kill()
    except Exception:  # noqa: BLE001 - best effort on the way out
        pass


def _exit_interrupted() -> None:
    """At exit after an interrupt: end here with 130 (streams flushed, workers killed)."""
    exit_now(130)


def _end(code: int, message: str) -> None:
    os.write(2, (message + "\n").encode())
    _kill_children()
    os._exit(code)


class Watchdog:
    """The thread :func:`install` started; :meth:`budget_done` stops watching the budget
    (the budgeted work has returned)."""

    #: the wakeup socket pair, set by :func:`install` when it registers the signal fd
    _sockets: tuple[socket.socket, socket.socket]

    def __init__(self, budget_end: float | None) -> None:
        self.budget_end = budget_end
        self._budget_done = threading.Event()

    def budget_done(self) -> None:
        """The work ended within the budget: the watchdog no longer ends the process for it."""
        self._budget_done.set()

    def _budget_over(self, now: float) -> bool:
        return (self.budget_end is not None and not self._budget_done.is_set()
                and now >= self.budget_end + BUDGET_GRACE)

    def _watch(self, read: socket.socket) -> None:
        interrupted_at = None
        while True:
            now = time.monotonic()
            waits = [INTERRUPT_GRACE - (now - interrupted_at)] if interrupted_at is not None else []
            if self.budget_end is not None and not self._budget_done.is_set():
                waits.append(self.budget_end + BUDGET_GRACE - now)
            read.settimeout(max(min(waits), 0.001) if waits else 1.0)
            try:
                data = read.recv(64)
            except (TimeoutError, socket.timeout, BlockingIOError):
                data = b""
            now = time.monotonic()
            if interrupted_at is None and signal.SIGINT in data:
                interrupted_at = now
                # if the command ends by itself, it skips the interpreter's slow teardown:
                # registered last, this runs first among the exit functions
                atexit.unregister(_exit_interrupted)
                atexit.register(_exit_interrupted)
            if interrupted_at is not None and now - interrupted_at >= INTERRUPT_GRACE:
                _end(130, "interrupted: stopped (what was stored before stays; continue a session with --resume)")
            if self._budget_over(now):
                _end(2, "error: the time budget ran out and the work did not stop in time: stopped "
                        "(the trials told so far are stored); give a larger time budget")


def install(budget_end: float | None = None) -> Watchdog:
    """Watch for SIGINT and, with ``budget_end`` (a :func:`time.monotonic` time), for the
    end of a time budget (module docstring). From the main thread (elsewhere the
    returned watchdog does nothing)."""
    global _installed
    if _installed is not None:
        return watch_budget(budget_end)
    dog = Watchdog(budget_end)
    if threading.current_thread() is not threading.main_thread():
        return dog
    read, write = socket.socketpair()
    write.setblocking(False)
    try:
        signal.set_wakeup_fd(write.fileno(), warn_on_full_buffer=False)
    except (ValueError, OSError):
        return dog
    if signal.getsignal(signal.SIGINT) in (signal.SIG_DFL, None):  # an ignored SIGINT stays ignored
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a C-level handler that writes the fd
    dog._sockets = (read, write)  # kept open as long as the watchdog lives
    threading.Thread(target=dog._watch, args=(read,), name="metabo-watchdog", daemon=True).start()
    _installed = dog
    return dog


_installed: Watchdog | None = None


def watch_budget(budget_end: float | None) -> Watchdog:
    """The installed watchdog, now also watching a time budget ending at ``budget_end``;
    without one (the library or a test calling a command in its own process, where
    ending the process is not ours to do), a watchdog that does nothing."""
    if _installed is None:
        return Watchdog(budget_end)
    _installed.budget_end = budget_end
    _installed._budget_done.clear()
    return _installed


def exit_now(code: int) -> int:
    """End the command at once with ``code`` (its streams flushed, its workers killed)
    when the watchdog runs it: an interrupted command skips the interpreter's slow
    teardown. Otherwise return ``code``."""
    if _installed is None:
        return code
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    _kill_children()
    os._exit(code)


def install_for_command(argv: list[str]) -> None:
    """:func:`install` at the start of ``metabo tune`` (before the heavy imports: an
    interrupt during them is otherwise swallowed by an import that catches everything)."""
    if any(arg == "tune" for arg in argv[1:]):
        install()


__all__ = ["BUDGET_GRACE", "INTERRUPT_GRACE", "Watchdog", "exit_now", "install", "install_for_command", "watch_budget"]
