"""tune()'s opening trial: under a time budget a small LightGBM is evaluated as trial 0 as
soon as the data are loaded, before the knowledge base is read; the strategy's picks follow."""

from __future__ import annotations

import pytest

from metabo.data.loaders import load_dataset
from metabo.kb import KnowledgeBase
from metabo.optimizer import tune
from metabo.space.algorithms import default_cash_space
from metabo.tuning.trials import OPENING


@pytest.fixture(scope="module")
def iris():
    return load_dataset("sklearn:iris")


def _opening_params(space):
    algorithm, params = OPENING
    return space[algorithm].normalize({**space[algorithm].default_configuration(), **params})


def test_under_a_time_budget_the_opening_is_trial_0_and_recorded_like_any_other(kb_path, iris):
    space = default_cash_space(["lightgbm", "knn", "decision_tree"])
    seen = []
    with KnowledgeBase(kb_path) as kb:
        result = tune(iris, budget=3, time_budget=120, space=space, strategy="random", kb=kb, seed=2,
                      session_id="s", meta_features=False, progress=seen.append, ensemble="none")
        first = result.history[0]
        assert (first.algorithm, dict(first.params)) == (OPENING[0], _opening_params(space))
        assert first.ok and [r.number for r in seen] == [0, 1, 2]
        # the strategy's own picks come after it, and the session counts it: 3 trials in all
        assert len(result.history.completed) == 3
        ends = result.trial_end_seconds
        assert result.time_to_first_model == ends[0] <= ends[1] <= ends[2]
        runs = kb.query("SELECT DISTINCT config_id FROM runs WHERE source = 'session:s' AND metric = 'error_rate'")
        assert first.config_id in set(runs["config_id"])


def test_the_strategy_sees_the_opening_in_its_history(iris):
    """The random strategy draws its trial k from (seed, k): with the opening, its first
    draw is trial 1's, the same configuration as trial 1 of a run without one."""
    space = default_cash_space(["lightgbm", "knn", "decision_tree"])
    with_opening = tune(iris, budget=3, time_budget=120, space=space, strategy="random", seed=5, ensemble="none")
    without = tune(iris, budget=3, time_budget=120, space=space, strategy="random", seed=5, ensemble="none",
                   opening=False)
    assert with_opening.history[0].algorithm == "lightgbm" and without.history[0].config_id != \
        with_opening.history[0].config_id
    assert [r.config_id for r in with_opening.history][1:] == [r.config_id for r in without.history][1:]


@pytest.mark.slow
def test_no_opening_without_a_time_budget_without_lightgbm_or_on_a_resumed_session(kb_path, iris):
    space = default_cash_space(["lightgbm", "knn"])
    plain = tune(iris, budget=2, space=space, strategy="random", seed=1, ensemble="none")
    assert plain.history[0].config_id != tune(iris, budget=2, time_budget=120, space=space, strategy="random",
                                              seed=1, ensemble="none").history[0].config_id
    assert [r.config_id for r in plain.history] == [
        r.config_id for r in tune(iris, budget=2, space=space, strategy="random", seed=1, ensemble="none").history]
    no_lightgbm = tune(iris, budget=2, time_budget=120, space=default_cash_space(["knn", "decision_tree"]),
                       strategy="random", seed=1, ensemble="none")
    assert {r.algorithm for r in no_lightgbm.history} <= {"knn", "decision_tree"}
    with KnowledgeBase(kb_path) as kb:
        tune(iris, budget=2, space=space, strategy="random", kb=kb, seed=1, session_id="r", meta_features=False,
             ensemble="none")
        resumed = tune(iris, budget=3, time_budget=120, space=space, strategy="random", kb=kb, seed=1,
                       session_id="r", meta_features=False, ensemble="none")
    assert [r.config_id for r in resumed.history][:2] == [r.config_id for r in plain.history]
    assert len(resumed.history.completed) == 3
