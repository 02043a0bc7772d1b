"""EO (thesis Algorithm 4.1): observations L(E \\ {h_j} U {h}) by hand, set semantics,
round-robin slots refilled greedily by the vote's zero-one loss, the base strategy fed the
relabelled history."""

from __future__ import annotations

import numpy as np
import pytest

from metabo.ensembles.eo import EnsembleOptimization
from metabo.ensembles.losses import c_bound, squared_margin_loss
from metabo.exceptions import InputDataError
from metabo.optimizer import Optimizer
from metabo.strategies import RandomSearch
from metabo.testing.problems import two_algorithm_problem

SPACE, _ = two_algorithm_problem()
Y = np.array([0, 1, 1, 0, 1, 0])


def one_hot(codes) -> np.ndarray:
    codes = np.asarray(codes)
    P = np.zeros((len(codes), 2))
    P[np.arange(len(codes)), codes] = 1.0
    return P


MODELS = {  # trial number -> predicted codes on the 6 validation rows
    0: [0, 1, 1, 0, 0, 1],  # 2 errors
    1: [0, 0, 1, 0, 1, 0],  # 1 error
    2: [1, 1, 1, 0, 1, 0],  # 1 error
    3: [0, 1, 0, 0, 1, 0],  # 1 error
}


class Recorder(RandomSearch):
    """Random suggestions; keeps the values of every history it is shown."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[dict[int, float]] = []

    def suggest(self, history, space, rng):
        self.seen.append({r.number: r.value for r in history.completed if r.ok})
        return super().suggest(history, space, rng)


def test_candidate_losses_by_hand_with_set_semantics():
    eo = EnsembleOptimization(RandomSearch(), Y, size=3, loss="squared_margin")
    for k, codes in MODELS.items():
        eo.codes[k] = np.asarray(codes)
    eo.slots = [0, 1, None]
    # slot 2 emptied (already empty): E_i = {0, 1}; h in E_i leaves it as it is
    losses = eo.candidate_losses(2)
    E01 = np.array([MODELS[0], MODELS[1]])
    assert losses[0] == pytest.approx(squared_margin_loss(E01, Y))
    assert losses[1] == pytest.approx(squared_margin_loss(E01, Y))
    assert losses[2] == pytest.approx(squared_margin_loss(np.vstack([E01, MODELS[2]]), Y))
    # slot 0 emptied: E_i = {1}
    losses = eo.candidate_losses(0, c_bound)
    assert losses[3] == pytest.approx(c_bound(np.array([MODELS[1], MODELS[3]]), Y))
    assert losses[1] == pytest.approx(c_bound(np.array([MODELS[1]]), Y))


def test_slots_refilled_round_robin_by_zero_one_then_the_loss():
    base = Recorder()
    eo = EnsembleOptimization(base, Y, size=2, loss="squared_margin")
    opt = Optimizer(SPACE, eo, seed=0)
    for k in range(4):
        t = opt.ask()
        opt.tell(t, 0.5)
        eo.observe(t.number, one_hot(MODELS[k]))
        j = k % 2
        rest = [h for s, h in enumerate(eo.slots) if h is not None and s != j]
        # the chosen model's vote error is the smallest over the pool, ties by squared margin
        def key(h, rest=rest):
            rows = np.array([MODELS[x] for x in sorted(set(rest) | {h})])
            votes = rows.sum(axis=0) * 2 > len(rows)  # majority of ones (ties: class 0)
            return (np.mean(votes.astype(int) != Y), squared_margin_loss(rows, Y), h)
        assert eo.slots[j] == min(range(k + 1), key=key)
    # the base strategy saw L(E_i U {h}) for the slot of each iteration
    assert len(base.seen) == 4
    assert base.seen[0] == {}
    assert set(eo.members()) <= set(MODELS)
    assert sum(eo.ensemble().values()) == pytest.approx(1.0)


def test_base_sees_relabelled_history():
    base = Recorder()
    eo = EnsembleOptimization(base, Y, size=3, loss="c_bound")
    opt = Optimizer(SPACE, eo, seed=1)
    for k in range(3):
        t = opt.ask()
        opt.tell(t, 0.9)
        eo.observe(t.number, one_hot(MODELS[k]))
    expected = eo.candidate_losses(3 % 3)
    opt.ask()
    assert base.seen[-1] == pytest.approx(expected)


def test_failed_trial_updates_its_slot_from_the_pool():
    eo = EnsembleOptimization(RandomSearch(), Y, size=2)
    eo.observe(0, one_hot(MODELS[1]))
    eo.observe(1, None)  # failed: nothing pooled, slot 1 refilled from the pool
    assert sorted(eo.codes) == [0] and eo.slots == [0, 0] and eo.members() == [0]


def test_one_slot_is_the_best_single_model():
    eo = EnsembleOptimization(RandomSearch(), Y, size=1, loss="sigmoid")
    for k, codes in MODELS.items():
        eo.observe(k, one_hot(codes))
    errors = {k: np.mean(np.asarray(c) != Y) for k, c in MODELS.items()}
    assert errors[eo.members()[0]] == min(errors.values())


def test_bad_arguments():
    with pytest.raises(InputDataError, match="loss"):
        EnsembleOptimization(RandomSearch(), Y, loss="hinge")
    with pytest.raises(InputDataError, match="size"):
        EnsembleOptimization(RandomSearch(), Y, size=0)
    eo = EnsembleOptimization(RandomSearch(), Y)
    with pytest.raises(InputDataError, match="shape"):
        eo.observe(0, np.ones((3, 2)) / 2)
