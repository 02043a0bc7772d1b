"""Pending trials told to the strategy as constant lies (Ginsbourger et al. 2010)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from metabo.exceptions import InputDataError
from metabo.kb import KnowledgeBase
from metabo.optimizer import GPBO, History, Optimizer, RandomSearch, TrialRecord


def small_gp(**kw):
    return GPBO(n_init=3, n_restarts=0, refit_every=1, n_random=200, n_local=5, n_starts=3, **kw)


def history(values: list[float | None]) -> History:
    """Trials 0..n-1 on one algorithm; None is pending, NaN a crash."""
    records = []
    for i, v in enumerate(values):
        r = TrialRecord(i, "quad", {"x": float(i), "y": 0.0}, f"c{i}")
        if v is not None:
            ok = math.isfinite(v)
            r = TrialRecord(i, "quad", {"x": float(i), "y": 0.0}, f"c{i}", state="complete", value=v,
                            status="ok" if ok else "crash")
        records.append(r)
    return History(records)


@pytest.mark.parametrize(("liar", "lie"), [("min", 1.0), ("mean", 2.0), ("max", 3.0)])
def test_pending_trials_take_the_lie_and_nothing_else_changes(liar, lie):
    h = history([1.0, None, 3.0, math.nan, 2.0, None])
    lied = h.with_lies(liar)
    assert [r.number for r in lied.pending] == []
    assert [lied[i].value for i in (1, 5)] == [lie, lie] and {lied[i].status for i in (1, 5)} == {"ok"}
    for i in (0, 2, 3, 4):  # told trials, the crash included, are untouched
        assert lied[i] == h[i]
    assert lied.config_ids == h.config_ids
    assert [r.state for r in h] == ["complete", "pending", "complete", "complete", "complete", "pending"]


def test_no_lie_without_pending_or_without_a_success():
    told = history([1.0, 2.0])
    assert told.with_lies("max") is told
    failed = history([math.nan, None])
    assert failed.with_lies("max") is failed
    with pytest.raises(InputDataError, match="liar"):
        told.with_lies("median")  # type: ignore[arg-type]


class Spy:
    """Records the histories a strategy is shown, then defers to random search."""

    name = "spy"

    def __init__(self) -> None:
        self.seen: list[History] = []
        self._random = RandomSearch()

    def suggest(self, history, space, rng):
        self.seen.append(history)
        return self._random.suggest(history, space, rng)


def test_the_strategy_sees_pending_trials_as_lies_and_the_optimizer_keeps_them_pending(quad):
    space, objective = quad
    spy = Spy()
    opt = Optimizer(space, spy, seed=0, liar="max")
    first = opt.ask()
    opt.tell(first, 4.0)
    second = opt.ask()
    opt.tell(opt.ask(), 1.0)  # trial 2 told while trial 1 is pending
    opt.ask()
    shown = spy.seen[-1]
    assert [r.state for r in shown] == ["complete"] * 3 and shown[1].value == 4.0  # max of 4 and 1
    assert [r.number for r in opt.history.pending] == [1, 3] and opt.history[second.number].value != 4.0
    assert Optimizer(space, Spy(), liar=None).liar is None
    with pytest.raises(InputDataError, match="liar"):
        Optimizer(space, Spy(), liar="worst")  # type: ignore[arg-type]


def test_sequential_suggestions_do_not_depend_on_the_liar(quad):
    space, objective = quad
    runs = []
    for liar in ("max", None):
        opt = Optimizer(space, small_gp(), seed=5, liar=liar)
        for _ in range(7):
            t = opt.ask()
            opt.tell(t, objective(t.algorithm, t.params))
        runs.append([(r.config_id, r.value) for r in opt.history])
    assert runs[0] == runs[1]


def _batch_spread(space, objective, liar) -> float:
    """The smallest distance between 4 configurations asked together after 6 told trials."""
    opt = Optimizer(space, small_gp(), seed=2, liar=liar)
    for _ in range(6):
        t = opt.ask()
        opt.tell(t, objective(t.algorithm, t.params))
    batch = np.array([[t.params["x"], t.params["y"]] for t in (opt.ask() for _ in range(4))])
    gaps = [np.linalg.norm(batch[i] - batch[j]) for i in range(4) for j in range(i + 1, 4)]
    return float(min(gaps))


def test_a_batch_asked_before_any_tell_is_spread_out_by_the_lie(quad):
    space, objective = quad
    # without the lie the GP is unchanged between the asks: its acquisition maximum is found
    # again and again, a hair from the last one; with it, the pending points are "observed"
    spread_lie = _batch_spread(space, objective, "max")
    spread_none = _batch_spread(space, objective, None)
    assert spread_lie > 10 * spread_none


def test_the_liar_is_stored_with_the_session_and_restored_on_resume(tmp_path, quad):
    space, _ = quad
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        did = kb.register_dataset(name="toy", source="synthetic")
        Optimizer(space, RandomSearch(), kb=kb, session_id="s", dataset_id=did, liar="min").ask()
        assert Optimizer.resume(kb, "s", space, RandomSearch()).liar == "min"


def test_resume_can_leave_pending_trials_to_whoever_asked_them(tmp_path, quad):
    space, objective = quad
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        did = kb.register_dataset(name="toy", source="synthetic")
        opt = Optimizer(space, RandomSearch(), kb=kb, session_id="s", dataset_id=did)
        told = opt.ask()
        opt.tell(told, objective(told.algorithm, told.params))
        held = opt.ask()  # a client holds this trial while the service restarts
        again = Optimizer.resume(kb, "s", space, RandomSearch(), reask_pending=False)
        fresh = again.ask()
        assert fresh.number == 2 and fresh.config_id != held.config_id
        again.tell(held.number, 0.5)  # the held trial is still tellable
        assert again.history[held.number].value == 0.5 and [r.number for r in again.history.pending] == [2]
        assert Optimizer.resume(kb, "s", space, RandomSearch()).ask().number == 2  # default: re-asked
