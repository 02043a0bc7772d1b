"""Ask/tell, recording in the knowledge base, resume, selection."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from metabo.exceptions import InputDataError, MetaboError
from metabo.kb import KnowledgeBase
from metabo.kb.canonical import config_id
from metabo.optimizer import GPBO, Optimizer, RandomSearch
from metabo.strategies import posterior_model


def small_gp(**kw):
    return GPBO(n_init=3, n_restarts=0, refit_every=3, n_random=100, n_local=3, n_starts=3, **kw)


def run(opt: Optimizer, objective, n: int) -> None:
    while len(opt.history.completed) < n:
        t = opt.ask()
        opt.tell(t, objective(t.algorithm, t.params))


def sequence(opt: Optimizer) -> list[tuple[str, str, float]]:
    return [(r.algorithm, r.config_id, r.value) for r in opt.history]


def test_ask_tell_round_trip_is_recorded(kb_path, dataset_id, small_cash):
    space, objective = small_cash
    with KnowledgeBase(kb_path) as kb:
        opt = Optimizer(space, RandomSearch(), kb=kb, session_id="s1", dataset_id=dataset_id, seed=3)
        t0 = opt.ask()
        assert t0.number == 0 and t0.config_id == config_id(t0.algorithm, t0.params)
        space.validate(t0.algorithm, t0.params)
        rec = opt.tell(t0, 0.25, test_value=0.3, fit_seconds=1.5)
        assert rec.complete and rec.ok and rec.value == 0.25
        t1 = opt.ask()
        opt.tell(t1.number, None, status="crash", message="boom")
        runs = kb.query("SELECT config_id, metric, value, status, fit_seconds, message, source FROM runs "
                        "ORDER BY metric, status")
        session = kb.query("SELECT * FROM sessions WHERE session_id = 's1'").iloc[0]
    assert set(runs["source"]) == {"session:s1"}
    assert runs[["metric", "status"]].values.tolist() == [
        ["error_rate", "crash"], ["error_rate", "ok"], ["test_error_rate", "ok"]]
    ok = runs[runs["status"] == "ok"]
    assert set(ok["config_id"]) == {t0.config_id} and sorted(ok["value"]) == [0.25, 0.3]
    assert ok["fit_seconds"].tolist() == [1.5, 1.5]
    crash = runs[runs["status"] == "crash"].iloc[0]
    assert crash["config_id"] == t1.config_id and math.isnan(crash["value"]) and crash["message"] == "boom"
    settings = json.loads(session["settings"])
    assert session["strategy"] == "random" and session["dataset_id"] == dataset_id
    assert settings["seed"] == 3 and settings["metric"] == "error_rate" and settings["space"] == space.to_json()
    frame = opt.history.to_frame()
    assert frame["status"].tolist() == ["ok", "crash"] and frame["best_so_far"].tolist()[0] == 0.25
    assert opt.history.y.tolist() == [0.25, 0.25]  # the crash imputed as the worst observed value


def test_tell_rejects_bad_reports(small_cash):
    space, _ = small_cash
    opt = Optimizer(space, RandomSearch())
    t = opt.ask()
    with pytest.raises(InputDataError, match="finite"):
        opt.tell(t, math.nan)
    with pytest.raises(InputDataError, match="status"):
        opt.tell(t, 0.1, status="weird")
    with pytest.raises(InputDataError, match="no trial 5"):
        opt.tell(5, 0.1)
    opt.tell(t, 0.1)
    with pytest.raises(InputDataError, match="already told"):
        opt.tell(t, 0.2)
    with pytest.raises(MetaboError):
        Optimizer(space, RandomSearch()).best()


def test_store_needs_a_dataset_and_a_new_session(kb_path, dataset_id, small_cash):
    space, _ = small_cash
    with KnowledgeBase(kb_path) as kb:
        with pytest.raises(InputDataError, match="dataset_id"):
            Optimizer(space, RandomSearch(), kb=kb)
        Optimizer(space, RandomSearch(), kb=kb, session_id="s", dataset_id=dataset_id)
        with pytest.raises(InputDataError, match="resume"):
            Optimizer(space, RandomSearch(), kb=kb, session_id="s", dataset_id=dataset_id)
        other = type(space)({"a": space["a"]})
        with pytest.raises(InputDataError, match="another search space"):
            Optimizer.resume(kb, "s", other, RandomSearch())
        with pytest.raises(InputDataError, match="no session"):
            Optimizer.resume(kb, "nope", space, RandomSearch())


def test_resume_continues_the_uninterrupted_sequence(kb_path, dataset_id, small_cash):
    """GP-BO with n_init=3: the resumed GP (rebuilt from the store) suggests as the cached one."""
    space, objective = small_cash
    full = Optimizer(space, small_gp(), seed=7)  # uninterrupted (the store changes nothing)
    run(full, objective, 8)
    expected = sequence(full)
    with KnowledgeBase(kb_path) as kb:
        first = Optimizer(space, small_gp(), kb=kb, session_id="s", dataset_id=dataset_id, seed=7)
        run(first, objective, 4)
        pending = first.ask()  # the process stops while this trial is evaluated
        before = sequence(first)
    with KnowledgeBase(kb_path) as kb:
        resumed = Optimizer.resume(kb, "s", space, small_gp())
        assert sequence(resumed)[:4] == before[:4] and resumed.seed == 7
        assert [r.number for r in resumed.history.pending] == [4]
        again = resumed.ask()
        assert again == pending  # the pending trial is re-asked as it was
        resumed.tell(again, objective(again.algorithm, again.params))
        run(resumed, objective, 8)
        assert sequence(resumed) == expected
        n_runs = kb.query("SELECT count(*) AS n FROM runs WHERE source = 'session:s'")["n"].iloc[0]
    assert n_runs == 8


def test_waiting_writes_land_together_as_immediate_ones_would(kb_path, dataset_id, small_cash):
    """write_every: nothing of the session's trials is in the store until the write, then
    the same runs and trial records as writing each at once, and a resume from it sees
    the same history; finish() writes what still waits."""
    space, objective = small_cash

    def stored(kb, session):
        runs = kb.query("SELECT config_id, metric, value, status, fold FROM runs WHERE source = ? "
                        "ORDER BY config_id, metric", [f"session:{session}"])
        states = kb.query("SELECT key, value FROM ingest_state WHERE key LIKE ? ORDER BY key", [f"session:{session}:%"])
        return runs, [(k.split(":", 2)[2], v) for k, v in states.itertuples(index=False)]

    with KnowledgeBase(kb_path) as kb:
        at_once = Optimizer(space, RandomSearch(), kb=kb, session_id="now", dataset_id=dataset_id, seed=5)
        later = Optimizer(space, RandomSearch(), kb=kb, session_id="later", dataset_id=dataset_id, seed=5,
                          write_every=1e9)
        for opt in (at_once, later):
            run(opt, objective, 3)
            t = opt.ask()  # pending when written
            opt.tell(opt.ask(), None, status="crash", message="boom")
        assert stored(kb, "later")[0].empty and stored(kb, "later")[1] == []
        later.flush()
        runs_now, states_now = stored(kb, "now")
        runs_later, states_later = stored(kb, "later")
        assert len(runs_now) == 4 and runs_later.equals(runs_now)
        assert [k for k, _ in states_later] == [k for k, _ in states_now]
        assert [json.loads(v)["state"] for _, v in states_later] == [json.loads(v)["state"] for _, v in states_now]
        in_time = kb.query("SELECT config_id FROM runs WHERE source = 'session:later' ORDER BY created_at")
        assert in_time["config_id"].tolist() == [r.config_id for r in later.history.completed]  # told order kept
        resumed = Optimizer.resume(kb, "later", space, RandomSearch())
        assert sequence(resumed)[:3] == sequence(at_once)[:3] and [r.number for r in resumed.history.pending] == [3]
        resumed.write_every = 1e9
        resumed.tell(t, 0.5)
        resumed.finish()
        assert kb.query("SELECT count(*) AS n FROM runs WHERE source = 'session:later'")["n"].iloc[0] == 5


def test_random_search_never_repeats(small_cash):
    space, objective = small_cash
    tiny = type(space)({"b": space["b"].__class__("b", (space["b"]["n"],))})  # 10 configurations in all
    opt = Optimizer(tiny, RandomSearch(), seed=0)
    run(opt, lambda a, p: float(p["n"]), 10)
    assert len({r.config_id for r in opt.history}) == 10
    with pytest.raises(InputDataError, match="exhausted"):
        opt.ask()
    opt = Optimizer(space, RandomSearch(), seed=1)
    run(opt, objective, 60)
    assert len({r.config_id for r in opt.history}) == 60


def test_same_seed_same_suggestions_other_seed_others(small_cash):
    space, objective = small_cash
    runs = {}
    for seed in (0, 0, 1):
        opt = Optimizer(space, RandomSearch(), seed=seed)
        run(opt, objective, 5)
        runs.setdefault(seed, []).append([r.config_id for r in opt.history])
    assert runs[0][0] == runs[0][1] and runs[0][0] != runs[1][0]


@pytest.mark.parametrize("make", [RandomSearch, small_gp], ids=["random", "gp"])
def test_posterior_mean_selects_an_evaluated_configuration(quad, make):
    space, objective = quad
    opt = Optimizer(space, make(), seed=2)
    rng = np.random.default_rng(0)
    run(opt, lambda a, p: objective(a, p) + rng.normal(0, 0.5), 12)
    t = opt.ask()
    opt.tell(t, None, status="crash")
    model = None if make is small_gp else posterior_model(opt.strategy, seed=2)  # random search has no GP
    chosen = opt.best(select="posterior_mean", model=model)
    ok_ids = {r.config_id for r in opt.history.completed if r.ok}
    assert chosen.config_id in ok_ids
    if make is RandomSearch:  # without a model of its own, it must be given one
        with pytest.raises(InputDataError, match="models no posterior mean"):
            opt.best(select="posterior_mean")
    assert opt.best().value == min(r.value for r in opt.history.completed if r.ok)
    with pytest.raises(InputDataError, match="select"):
        opt.best(select="median")  # type: ignore[arg-type]


@pytest.mark.slow
@pytest.mark.parametrize("status", ["crash", "timeout", "memout"])
@pytest.mark.parametrize("value, test_value", [(0.3, None), (None, 0.3), (2.05e16, None)])
def test_a_failed_trial_told_with_a_value_is_refused_and_stays_pending(kb_path, dataset_id, small_cash, status, value,
                                                                       test_value):
    space, _ = small_cash
    with KnowledgeBase(kb_path) as kb:
        opt = Optimizer(space, RandomSearch(), kb=kb, session_id="s", dataset_id=dataset_id, seed=0)
        trial = opt.ask()
        with pytest.raises(InputDataError, match="has no value"):
            opt.tell(trial, value, status=status, test_value=test_value)
        assert kb.query("SELECT count(*) AS n FROM runs")["n"].iloc[0] == 0
        assert opt.tell(trial, None, status=status).status == status  # told as a failure, it is recorded
