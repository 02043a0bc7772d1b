"""Fixes of the RLGP/RGPE ensembles (:mod:`metabo.strategies.transfer_ensemble`): each test
reproduces one cause of the filed issue (exploration of untried algorithms, scales, the
target's weight, the variance before any weight, the target GP's settings, the round
robin over one-configuration algorithms)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from metabo.kb.canonical import config_id
from metabo.kb.past import PastRuns
from metabo.optimizer import Optimizer
from metabo.optimizer.history import History, TrialRecord
from metabo.space.algorithms import default_cash_space
from metabo.space.cash import CASHSpace
from metabo.strategies.rgpe import RGPE
from metabo.strategies.rlgp import RLGP
from metabo.surrogates.bank import SurrogateBank, space_encoder
from metabo.testing.problems import two_algorithm_problem

SPACE, OBJECTIVE = two_algorithm_problem()


def make_past(space: CASHSpace, tasks: dict[str, object], n: int = 20, seed: int = 0,
              algorithms: tuple[str, ...] | None = None) -> PastRuns:
    """Past tasks evaluated on the same ``n`` random configurations of ``algorithms``
    (all of the space's by default); ``tasks[name](a, p)`` is the value."""
    sub = space if algorithms is None else space.subset(algorithms)
    configs = sub.sample(np.random.default_rng(seed), n)
    rows = [(name, a, p, float(f(a, p))) for name, f in tasks.items() for a, p in configs]
    frame = pd.DataFrame(rows, columns=["dataset_id", "algorithm", "params", "value"])
    frame["config_id"] = [config_id(a, p) for a, p in zip(frame["algorithm"], frame["params"])]
    frame = frame.drop_duplicates(["dataset_id", "config_id"])
    return PastRuns.from_frame(frame)


def history_of(configs: list[tuple[str, dict]], values: list[float]) -> History:
    return History([TrialRecord(i, a, dict(p), config_id(a, p), state="complete", value=float(v), status="ok")
                    for i, ((a, p), v) in enumerate(zip(configs, values))])


# ---------------------------------------------------------------- 6. round robin
def _cash_objective(a: str, p: dict) -> float:
    """lda and gaussian_nb (one configuration each) and qda (one float)."""
    if a == "lda":
        return 0.3
    if a == "gaussian_nb":
        return 0.4
    return 0.2 + 0.1 * (np.log10(p["reg_param"]) + 1.5) ** 2


@pytest.mark.parametrize("cls", [RLGP, RGPE])
def test_one_per_algorithm_skips_exhausted_one_configuration_algorithms(cls):
    """The round robin reaches lda and gaussian_nb again after their only configuration
    was asked: it moves on to an algorithm with configurations left instead of raising."""
    space = default_cash_space(["lda", "gaussian_nb", "qda"])
    tasks = {f"t{i}": (lambda a, p, i=i: _cash_objective(a, p) + 0.05 * i) for i in range(3)}
    bank = SurrogateBank.fit(make_past(space, tasks, n=12), space_encoder(space), max_points=None, seed=0)
    opt = Optimizer(space, cls(bank, one_per_algorithm=True, n_random=30, n_local=2, seed=0), seed=0)
    for _ in range(9):  # three rounds of the three algorithms
        t = opt.ask()
        opt.tell(t, _cash_objective(t.algorithm, t.params))
    ids = [r.config_id for r in opt.history]
    assert len(set(ids)) == len(ids)
    counts = {a: sum(r.algorithm == a for r in opt.history) for a in space.algorithms}
    assert counts["lda"] == counts["gaussian_nb"] == 1 and counts["qda"] == 7
