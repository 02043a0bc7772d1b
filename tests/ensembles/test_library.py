"""The library of out-of-fold predictions (metabo.ensembles.library): what it keeps, what
it drops, and what it chooses."""

from __future__ import annotations

import numpy as np
import pytest

from metabo.ensembles.guard import guarded_ensemble
from metabo.ensembles.library import OutOfFoldLibrary
from metabo.ensembles.selection import PostHocSelection
from metabo.evaluation.evaluate import Evaluation
from metabo.evaluation.protocols import Split
from metabo.optimizer.history import TrialRecord

N, K, H = 200, 2, 100
# two folds: rows 0..99 validate fold 0, rows 100..199 fold 1 (selection rows in fold order)
SPLITS = [Split(0, 0, 0, train_idx=np.arange(H, N), valid_idx=np.arange(H)),
          Split(1, 0, 0, train_idx=np.arange(H), valid_idx=np.arange(H, N))]
CODES = np.tile([0, 1], N // 2)


def _evaluations(proba: np.ndarray, status: str = "ok") -> list[Evaluation]:
    return [Evaluation("knn", {}, fold, 0, None, 0, status, None, 0.1, 0.01, {"error_rate": 0.0},
                       valid_proba=None if status != "ok" else proba[fold * H:(fold + 1) * H])
            for fold in range(2)]


def _record(number: int, value: float | None, status: str = "ok") -> TrialRecord:
    return TrialRecord(number, "knn", {}, f"c{number}", state="complete",
                       value=np.nan if value is None else value, status=status)


def _noisy(seed: int, flip: float) -> np.ndarray:
    """Probabilities that call the true class with confidence 0.7, wrong on a share ``flip``."""
    rng = np.random.default_rng(seed)
    wrong = rng.random(N) < flip
    p1 = np.where((CODES == 1) ^ wrong, 0.7, 0.3)
    return np.column_stack([1 - p1, p1])


def test_it_keeps_successful_trials_in_float32_and_skips_failed_ones():
    lib = OutOfFoldLibrary.for_splits(SPLITS, CODES, K, seed=0)
    lib.observe(_record(0, 0.2), _evaluations(_noisy(0, 0.2)))
    lib.observe(_record(1, None, status="crash"), _evaluations(_noisy(1, 0.2), status="crash"))
    lib.observe(_record(2, 0.1), _evaluations(_noisy(2, 0.1))[:1])  # one split missing: not all rows predicted
    assert len(lib) == 1 and lib.selection.probas[0].dtype == np.float32
    np.testing.assert_allclose(lib.selection.probas[0], _noisy(0, 0.2), rtol=1e-6)


def test_past_its_ceiling_the_worst_model_leaves():
    lib = OutOfFoldLibrary.for_splits(SPLITS, CODES, K, max_models=2, seed=0)
    for number, value in enumerate([0.3, 0.1, 0.2, 0.3]):
        lib.observe(_record(number, value), _evaluations(_noisy(number, value)))
    assert sorted(lib.selection.probas) == [1, 2]


def test_it_chooses_what_the_guard_decides_on_the_same_library():
    lib = OutOfFoldLibrary.for_splits(SPLITS, CODES, K, seed=3)
    assert lib.choose(0) is None  # nothing to ensemble yet
    probas = {k: _noisy(10 + k, 0.3) for k in range(6)}
    for k, P in probas.items():
        lib.observe(_record(k, float(np.mean(P.argmax(1) != CODES))), _evaluations(P))
    best = min(probas, key=lambda k: (np.mean(probas[k].argmax(1) != CODES), k))
    choice = lib.choose(best)
    reference = PostHocSelection(None, CODES, n_classes=K, seed=3)
    for k, P in probas.items():
        reference.observe(k, P.astype(np.float32))
    expected = guarded_ensemble(reference, seed=3, single=best)
    assert choice is not None and choice.models == 6
    assert (choice.kept, choice.combine) == (expected.kept, expected.combine)
    assert choice.weights == pytest.approx(expected.weights)
    # independent errors at 30% each: the averaged ensemble is right far more often
    assert choice.kept == "ensemble" and sum(choice.weights.values()) == pytest.approx(1.0)
    assert lib.choose(99) is None  # a trial without predictions in the library


def test_refitted_holds_only_the_given_models_on_the_same_rows_and_chooses_as_a_fresh_library():
    lib = OutOfFoldLibrary.for_splits(SPLITS, CODES, K, max_models=7, seed=3)
    for number in range(4):
        lib.observe(_record(number, 0.2), _evaluations(_noisy(number, 0.2)))
    grown = {1: (0.15, _noisy(11, 0.15)), 3: (0.1, _noisy(13, 0.1)), 5: (0.12, _noisy(15, 0.12))}
    refitted = lib.refitted(grown)
    assert sorted(refitted.selection.probas) == [1, 3, 5] and len(lib) == 4  # the search's library untouched
    assert refitted.n_splits == 2 and refitted.max_models == 7 and refitted.seed == 3
    np.testing.assert_array_equal(refitted.selection.y, lib.selection.y)
    fresh = OutOfFoldLibrary(CODES, K, max_models=7, seed=3)
    for number, (value, proba) in grown.items():
        fresh.add(number, value, proba)
    assert refitted.choose(3).decision == fresh.choose(3).decision


def test_among_keeps_the_given_models_predictions_and_values():
    lib = OutOfFoldLibrary.for_splits(SPLITS, CODES, K, max_models=7, seed=3)
    for number in range(4):
        lib.observe(_record(number, 0.1 * (number + 1)), _evaluations(_noisy(number, 0.2)))
    part = lib.among([3, 1, 9])  # 9 is not in the library: ignored
    assert sorted(part.selection.probas) == [1, 3] and len(lib) == 4
    assert part._values == {1: lib._values[1], 3: lib._values[3]}
    np.testing.assert_array_equal(part.selection.probas[3], lib.selection.probas[3])
    assert part.max_models == 7 and part.seed == 3 and part.n_splits == 2


def test_the_promotions_library_is_the_rung_of_most_rows_holding_the_best_and_another():
    from metabo.tuning.final import Promotions

    lib = OutOfFoldLibrary.for_splits(SPLITS, CODES, K, seed=0)
    promotions = Promotions()
    for number, rows in [(0, 6000), (1, 6000), (2, 6000), (0, 18000), (2, 18000), (1, 54000)]:
        promotions(number, rows, 0.1, _noisy(number + rows, 0.1))
    assert sorted(promotions.library(lib, 0).selection.probas) == [0, 2]  # 18,000 rows: 0 and 2
    assert sorted(promotions.library(lib, 1).selection.probas) == [0, 1, 2]  # 1 alone on 54,000: 6,000's
    assert promotions.library(lib, 7) is None  # never promoted: the search's library stands


def test_replaced_swaps_one_models_predictions_and_value_and_keeps_the_others():
    """The model given more boosting rounds stands for its trial: its probabilities and value
    replace the trial's (or join the library), the others' are untouched, and the library
    chooses as a fresh one holding the same models."""
    lib = OutOfFoldLibrary.for_splits(SPLITS, CODES, K, max_models=7, seed=3)
    for number in range(3):
        lib.observe(_record(number, 0.2), _evaluations(_noisy(number, 0.2)))
    better = _noisy(20, 0.05)
    swapped = lib.replaced(1, 0.05, better)
    assert sorted(swapped.selection.probas) == [0, 1, 2] and swapped._values[1] == 0.05
    np.testing.assert_array_equal(swapped.selection.probas[1], better.astype(np.float32))
    np.testing.assert_array_equal(swapped.selection.probas[0], lib.selection.probas[0])
    np.testing.assert_array_equal(lib.selection.probas[1], _noisy(1, 0.2).astype(np.float32))  # untouched
    assert sorted(lib.replaced(7, 0.1, better).selection.probas) == [0, 1, 2, 7]
    fresh = OutOfFoldLibrary(CODES, K, max_models=7, seed=3)
    for number in range(3):
        fresh.add(number, 0.05 if number == 1 else 0.2, better if number == 1 else _noisy(number, 0.2))
    assert swapped.choose(1).decision == fresh.choose(1).decision
