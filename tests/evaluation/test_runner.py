"""The per-run limits: timeout, memout, crash, normal return, in-process fast path."""

from __future__ import annotations

import faulthandler
import os
import signal
import time

import numpy as np
import pytest

from metabo.evaluation.runner import Crash, Memout, Ok, Timeout, run_with_limits


def _add(a, b):
    return a + b


def _sleep(seconds):
    time.sleep(seconds)
    return "woke"


def _raise(message):
    raise ValueError(message)


def _hog(megabytes):
    block = np.ones(megabytes * 2**20 // 8)  # touches every page
    return float(block.sum())


def _die(code):
    os._exit(code)


def _segfault():
    faulthandler.disable()  # pytest's handler would print the child's stack
    os.kill(os.getpid(), signal.SIGSEGV)
    time.sleep(5)


def _unpicklable():
    return lambda: None


@pytest.mark.parametrize("limits", [{}, {"time_limit": 10.0}, {"memory_limit_mb": 500}])
def test_normal_return(limits):
    out = run_with_limits(_add, 2, 3, **limits)
    assert isinstance(out, Ok) and out.value == 5 and out.status == "ok"
    assert 0 <= out.seconds < 5


def test_timeout_kills_the_worker_soon_after_the_limit():
    start = time.perf_counter()
    out = run_with_limits(_sleep, 30, time_limit=1.0)
    elapsed = time.perf_counter() - start
    assert isinstance(out, Timeout) and out.status == "timeout"
    assert 1.0 <= elapsed < 2.0
    assert "limit 1.0" in out.message


@pytest.mark.parametrize("limits", [{}, {"time_limit": 10.0}])
def test_exception_becomes_a_crash_with_its_message(limits):
    out = run_with_limits(_raise, "bad things", **limits)
    assert isinstance(out, Crash) and out.status == "crash"
    assert out.message == "ValueError: bad things"


def test_allocating_past_the_memory_limit_is_a_memout():
    out = run_with_limits(_hog, 1024, memory_limit_mb=100)
    assert isinstance(out, Memout) and out.status == "memout"
    assert "MemoryError" in out.message
    assert isinstance(run_with_limits(_hog, 20, memory_limit_mb=300), Ok)


def test_in_process_memory_error_is_a_memout():
    def oom():
        raise MemoryError("no room")

    assert isinstance(run_with_limits(oom), Memout)


def test_a_worker_that_dies_without_reporting_is_a_crash():
    out = run_with_limits(_die, 3, time_limit=10.0)
    assert isinstance(out, Crash) and "code 3" in out.message
    out = run_with_limits(_segfault, time_limit=10.0)
    assert isinstance(out, Crash) and "SIGSEGV" in out.message


def test_an_unpicklable_result_is_a_crash():
    out = run_with_limits(_unpicklable, time_limit=10.0)
    assert isinstance(out, Crash) and "could not be sent back" in out.message


def test_bad_limits_are_refused():
    with pytest.raises(ValueError):
        run_with_limits(_add, 1, 2, time_limit=0)
    with pytest.raises(ValueError):
        run_with_limits(_add, 1, 2, memory_limit_mb=-5)


def _step(kind):
    """One call of a trial's worker: its pid, after sleeping, raising or dying as told."""
    if kind == "sleep":
        time.sleep(60)
    elif kind == "raise":
        raise ValueError("bad fold")
    elif kind == "die":
        os._exit(3)
    return os.getpid()


def test_each_call_its_own_outcome_in_one_worker_until_one_is_killed():
    from metabo.evaluation.runner import run_each_with_limits

    calls = [("ok",), ("raise",), ("ok",), ("sleep",), ("ok",), ("die",), ("ok",)]
    outcomes = list(run_each_with_limits(_step, calls, time_limit=lambda i: 1.0 if i == 3 else 30.0))
    assert [o.status for o in outcomes] == ["ok", "crash", "ok", "timeout", "ok", "crash", "ok"]
    first, second, third = outcomes[0].value, outcomes[4].value, outcomes[6].value
    assert outcomes[2].value == first != os.getpid()  # one worker, past a call that raised
    assert len({first, second, third}) == 3  # a new worker after the timeout and after the death
    assert outcomes[1].message == "ValueError: bad fold" and "limit 1.0 s" in outcomes[3].message
    assert "exited with code 3" in outcomes[5].message


def test_a_call_without_time_is_a_timeout_without_a_worker():
    from metabo.evaluation.runner import run_each_with_limits

    outcomes = list(run_each_with_limits(_step, [("sleep",), ("ok",)], time_limit=lambda i: 0.0 if i == 0 else 30.0))
    assert [o.status for o in outcomes] == ["timeout", "ok"] and outcomes[0].seconds == 0.0
    # without limits: in this process, as run_with_limits
    assert [o.value for o in run_each_with_limits(_step, [("ok",), ("ok",)])] == [os.getpid()] * 2
