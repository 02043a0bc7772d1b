"""Run a function under a wall-clock and a memory limit, in a forked worker process.

:func:`run_with_limits` is the per-run limit of an evaluation. With a limit it forks a
child (``multiprocessing`` "fork" context, Linux) that runs ``fn(*args)`` and sends the
outcome back through a pipe:

- the parent waits at most ``time_limit`` seconds, then kills the child (SIGKILL):
  :class:`Timeout`;
- the child lowers its own address-space limit (``RLIMIT_AS``) to what it inherited
  plus ``memory_limit_mb``; an allocation beyond it raises ``MemoryError`` in the child
  (or a library's "bad_alloc"/"cannot allocate memory" error, matched by message):
  :class:`Memout`. The limit is relative because a forked child inherits the parent's
  whole address space (several hundred MB with NumPy, scikit-learn and DuckDB loaded),
  which an absolute limit would have to guess;
- any other exception: :class:`Crash` with ``"ExcType: message"``;
- a child that dies without reporting (a segfault, ``os._exit``, killed by the system):
  :class:`Crash` naming its exit code or signal.

Without any limit, ``fn`` runs in the calling process (the fast path tests use); its
exceptions are still turned into :class:`Crash` / :class:`Memout`.

Forking copies one thread of the parent: a child that uses a runtime whose thread pool
the parent already started (GNU OpenMP is the known case) can hang. That ends as a
:class:`Timeout` when a time limit is set, so give one whenever limits are used;
:func:`~metabo.evaluation.evaluate.evaluate` also runs fits on one thread by default.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import resource
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

logger = logging.getLogger(__name__)

_MEMORY_HINTS = ("bad_alloc", "cannot allocate memory", "out of memory", "unable to allocate")


@dataclass(frozen=True)
class Ok:
    """``fn`` returned ``value`` after ``seconds`` of wall-clock time."""

    value: Any
    seconds: float
    status: str = "ok"


@dataclass(frozen=True)
class Crash:
    """``fn`` raised (``message`` = ``"ExcType: message"``) or its worker died."""

    message: str
    seconds: float
    status: str = "crash"


@dataclass(frozen=True)
class Timeout:
    """The worker was killed when ``limit`` seconds had passed."""

    message: str
    seconds: float
    status: str = "timeout"


@dataclass(frozen=True)
class Memout:
    """``fn`` ran out of the memory it was allowed."""

    message: str
    seconds: float
    status: str = "memout"


Outcome: TypeAlias = Ok | Crash | Timeout | Memout


def describe(exc: BaseException) -> str:
    """``"ExcType: message"``, the form failures are recorded in."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _classify(exc: BaseException, memory_limited: bool) -> tuple[str, str]:
    message = describe(exc)
    if isinstance(exc, MemoryError):
        return "memout", message
    if memory_limited and any(h in message.lower() for h in _MEMORY_HINTS):
        return "memout", message
    return "crash", message


def _limit_memory(memory_limit_mb: int | None) -> None:
    """In a worker: lower the address-space limit to what it has now plus ``memory_limit_mb``
    (module docstring), never above the hard limit."""
    if memory_limit_mb is None:
        return
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = _address_space() + int(memory_limit_mb) * 2**20
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))


def _worker(conn: Any, fn: Callable[..., Any], calls: list[tuple[Any, ...]], memory_limit_mb: int | None) -> None:
    """Body of the forked worker of :func:`run_each_with_limits`: limit memory once, then run
    every call in turn and report each as (status, payload, seconds) as soon as it ends
    (a limit that cannot be set is the first call's crash)."""
    try:
        try:
            _limit_memory(memory_limit_mb)
        except (OSError, ValueError) as e:
            conn.send((*_classify(e, False), 0.0))
            return
        for args in calls:
            start = time.perf_counter()
            try:
                report: tuple[str, Any] = ("ok", fn(*args))
            except BaseException as e:  # noqa: BLE001 - everything is reported to the parent
                report = _classify(e, memory_limit_mb is not None)
            seconds = time.perf_counter() - start
            try:
                conn.send((*report, seconds))
            except BaseException as e:  # noqa: BLE001 - e.g. an unpicklable result
                status = "memout" if isinstance(e, MemoryError) else "crash"
                conn.send((status, f"the result could not be sent back: {describe(e)}", seconds))
    finally:
        conn.close()


def _address_space() -> int:
    """This process's current virtual memory size in bytes (Linux ``/proc``)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _died(exitcode: int | None, memory_limited: bool) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = str(-exitcode)
        hint = " (possibly out of memory)" if name == "SIGKILL" and memory_limited else ""
        return f"WorkerDied: the worker was killed by signal {name}{hint} without reporting"
    return f"WorkerDied: the worker exited with code {exitcode} without reporting"


def run_with_limits(
    fn: Callable[..., Any],
    *args: Any,
    time_limit: float | None = None,
    memory_limit_mb: int | None = None,
) -> Outcome:
    """Run ``fn(*args)`` under the limits and return its :data:`Outcome` (never raises
    for a failure of ``fn``; see module docstring). ``fn`` and its result must be
    picklable only for the result's trip through the pipe (fork shares the rest). With a
    limit, the worker of :func:`run_each_with_limits` for this one call."""
    if time_limit is not None and time_limit <= 0:
        raise ValueError(f"time_limit must be positive, got {time_limit}")
    if memory_limit_mb is not None and memory_limit_mb <= 0:
        raise ValueError(f"memory_limit_mb must be positive, got {memory_limit_mb}")
    if time_limit is None and memory_limit_mb is None:
        start = time.perf_counter()
        try:
            value = fn(*args)
        except Exception as e:  # noqa: BLE001 - a failure of fn is an outcome
            status, message = _classify(e, False)
            cls = Memout if status == "memout" else Crash
            return cls(message, time.perf_counter() - start)
        return Ok(value, time.perf_counter() - start)

    (outcome,) = run_each_with_limits(fn, [args], time_limit=time_limit, memory_limit_mb=memory_limit_mb)
    return outcome


def run_each_with_limits(
    fn: Callable[..., Any],
    calls: Sequence[tuple[Any, ...]],
    *,
    time_limit: float | Callable[[int], float | None] | None = None,
    memory_limit_mb: int | None = None,
) -> Iterator[Outcome]:
    """``run_with_limits(fn, *args)`` for each ``args`` of ``calls``, in order, yielding
    each :data:`Outcome` as it ends; with a limit, in one forked worker for all of them
    rather than one each (a fork of a process holding NumPy, scikit-learn and DuckDB costs
    tens of milliseconds, as much as a small fit). Each call keeps its own limits: the
    worker reports every call when it ends, and one that runs past its time limit (or
    kills the worker) is recorded alone; a new worker takes the calls after it.

    ``time_limit``: seconds for every call, or a function of the call's index giving its
    limit when the call starts to be waited for (None: none; 0 or less: no time left, a
    :class:`Timeout` without waiting)."""
    calls = list(calls)
    if time_limit is None and memory_limit_mb is None:
        for args in calls:
            yield run_with_limits(fn, *args)
        return
    if memory_limit_mb is not None and memory_limit_mb <= 0:
        raise ValueError(f"memory_limit_mb must be positive, got {memory_limit_mb}")

    def limit_of(i: int) -> float | None:
        return time_limit(i) if callable(time_limit) else time_limit

    ctx = mp.get_context("fork")
    i = 0
    while i < len(calls):
        limit = limit_of(i)
        if limit is not None and limit <= 0:  # no worker for a call without time
            i += 1
            yield Timeout("Timeout: no time left", 0.0)
            continue
        recv, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_worker, args=(send, fn, calls[i:], memory_limit_mb), name="metabo-eval")
        proc.start()
        send.close()
        try:
            while True:
                start = time.perf_counter()
                if not recv.poll(limit):
                    proc.kill()
                    elapsed = time.perf_counter() - start
                    i += 1
                    yield Timeout(f"Timeout: killed after {elapsed:.1f} s (limit {limit} s)", elapsed)
                    break  # a new worker for the calls after it
                try:
                    status, payload, seconds = recv.recv()
                except (EOFError, OSError):
                    proc.join()
                    i += 1
                    yield Crash(_died(proc.exitcode, memory_limit_mb is not None), time.perf_counter() - start)
                    break
                i += 1
                if status == "ok":
                    yield Ok(payload, seconds)
                else:
                    yield (Memout if status == "memout" else Crash)(payload, seconds)
                if i == len(calls):
                    break
                limit = limit_of(i)
                if limit is not None and limit <= 0:
                    break  # the worker has started this call; it is stopped, the call timed out above
        finally:
            if proc.is_alive():
                proc.kill()
            proc.join()
            recv.close()
