"""Protocols: fixed holdout, k-fold, reshuffled holdout, stratification, max_train."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from metabo.data.dataset import Dataset
from metabo.evaluation.protocols import Holdout, KFold, RefitOnTrainValid, ReshuffledHoldout, class_codes
from metabo.exceptions import InputDataError


def _imbalanced(n: int = 500, seed: int = 0) -> Dataset:
    rng = np.random.default_rng(seed)
    y = rng.choice(["a", "b", "c"], size=n, p=[0.7, 0.2, 0.1])
    return Dataset.from_frame(pd.DataFrame({"x": rng.normal(size=n), "y": y}), "y", name="imb", source="test")


def _parts(split):
    return [p for p in (split.train_idx, split.valid_idx, split.test_idx) if p is not None]


def _assert_partition(parts, n):
    allrows = np.concatenate(parts)
    assert len(allrows) == n and len(np.unique(allrows)) == n  # disjoint and covering


def test_holdout_is_fixed_for_a_seed_disjoint_and_covering():
    ds = _imbalanced()
    (a,) = Holdout().splits(ds, 7)
    (b,) = Holdout().splits(ds, 7)
    (c,) = Holdout().splits(ds, 8)
    for x, y in zip(_parts(a), _parts(b)):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(a.valid_idx, c.valid_idx)
    _assert_partition(_parts(a), ds.n_instances)
    assert (len(a.train_idx), len(a.valid_idx), len(a.test_idx)) == (300, 100, 100)
    assert (a.fold, a.repeat, a.split_seed, a.n_train) == (0, 0, 7, 300)


def test_holdout_is_stratified():
    ds = _imbalanced()
    codes = class_codes(ds)
    whole = np.bincount(codes, minlength=3)
    (s,) = Holdout().splits(ds, 3)
    for part, frac in ((s.train_idx, 0.6), (s.valid_idx, 0.2), (s.test_idx, 0.2)):
        counts = np.bincount(codes[part], minlength=3)
        assert np.all(np.abs(counts - frac * whole) <= 1.0 + 1e-9), (counts, frac * whole)


def test_holdout_without_test_part():
    ds = _imbalanced(101)
    (s,) = Holdout(train=0.7, valid=0.3, test=0.0).splits(ds, 0)
    assert s.test_idx is None
    _assert_partition(_parts(s), 101)


def test_stratification_falls_back_for_a_singleton_class(three_class):
    codes = class_codes(three_class)
    singleton = np.flatnonzero(np.bincount(codes) == 1)[0]
    for seed in range(5):
        (s,) = Holdout().splits(three_class, seed)
        assert singleton in codes[s.train_idx]  # the lone member goes to training
        _assert_partition(_parts(s), three_class.n_instances)


def test_kfold_partitions_and_stratifies():
    ds = _imbalanced(503)
    codes = class_codes(ds)
    whole = np.bincount(codes, minlength=3)
    splits = KFold(k=5).splits(ds, 1)
    assert [s.fold for s in splits] == list(range(5))
    _assert_partition([s.valid_idx for s in splits], 503)
    for s in splits:
        assert s.test_idx is None
        _assert_partition([s.train_idx, s.valid_idx], 503)
        assert len(s.valid_idx) in (100, 101)
        counts = np.bincount(codes[s.valid_idx], minlength=3)
        assert np.all(np.abs(counts - whole / 5) <= 1.0 + 1e-9)
    again = KFold(k=5).splits(ds, 1)
    assert all(np.array_equal(a.valid_idx, b.valid_idx) for a, b in zip(splits, again))


def test_kfold_with_a_shared_test_part():
    ds = _imbalanced(400)
    splits = KFold(k=4, test=0.25).splits(ds, 2)
    test = splits[0].test_idx
    assert len(test) == 100
    assert all(np.array_equal(s.test_idx, test) for s in splits)
    _assert_partition([test] + [s.valid_idx for s in splits], 400)


def test_kfold_tolerates_classes_smaller_than_k(three_class):
    splits = KFold(k=5).splits(three_class, 0)
    _assert_partition([s.valid_idx for s in splits], three_class.n_instances)


def test_reshuffled_holdout_changes_with_the_iteration_only():
    ds = _imbalanced()
    proto = ReshuffledHoldout()
    (s0,) = proto.splits(ds, 5)
    (s0b,) = proto.at(0).splits(ds, 5)
    (s1,) = proto.at(1).splits(ds, 5)
    np.testing.assert_array_equal(s0.valid_idx, s0b.valid_idx)
    assert not np.array_equal(s0.valid_idx, s1.valid_idx)
    assert (s1.split_seed, s1.repeat) == (5, 1)
    assert s0.test_idx is None and len(s1.valid_idx) == 100
    _assert_partition(_parts(s1), 500)


def test_reshuffled_holdout_keeps_its_test_part_fixed():
    ds = _imbalanced()
    proto = ReshuffledHoldout(train=0.6, valid=0.2, test=0.2)
    a, b = proto.at(0).splits(ds, 0)[0], proto.at(3).splits(ds, 0)[0]
    np.testing.assert_array_equal(a.test_idx, b.test_idx)
    assert not np.array_equal(a.train_idx, b.train_idx)
    _assert_partition(_parts(b), 500)
    assert (len(b.train_idx), len(b.valid_idx)) == (300, 100)


@pytest.mark.parametrize("proto", [Holdout(max_train=40), KFold(k=3, max_train=40), ReshuffledHoldout(max_train=40)])
def test_max_train_subsamples_the_training_part(proto):
    ds = _imbalanced()
    codes = class_codes(ds)
    full = {s.fold: s for s in type(proto)(**{**proto.__dict__, "max_train": None}).splits(ds, 4)}
    for s in proto.splits(ds, 4):
        assert s.n_train == 40
        assert np.isin(s.train_idx, full[s.fold].train_idx).all()
        np.testing.assert_array_equal(s.valid_idx, full[s.fold].valid_idx)
        counts = np.bincount(codes[s.train_idx], minlength=3)
        expected = 40 * np.bincount(codes[full[s.fold].train_idx], minlength=3) / full[s.fold].n_train
        assert np.all(np.abs(counts - expected) <= 1.0 + 1e-9)
    again = proto.splits(ds, 4)
    assert np.array_equal(again[0].train_idx, proto.splits(ds, 4)[0].train_idx)


def test_max_train_larger_than_the_training_part_changes_nothing():
    ds = _imbalanced()
    (s,) = Holdout(max_train=10_000).splits(ds, 0)
    assert s.n_train == 300


@pytest.mark.parametrize(
    "make",
    [
        lambda: Holdout(train=0.5, valid=0.2, test=0.2),
        lambda: Holdout(valid=0.0, train=0.8),
        lambda: KFold(k=1),
        lambda: KFold(test=1.0),
        lambda: ReshuffledHoldout(max_train=0),
        lambda: ReshuffledHoldout(iteration=-1),
    ],
)
def test_bad_protocols_are_refused(make):
    with pytest.raises(InputDataError):
        make()


def test_bad_seed_and_regression_are_refused():
    ds = _imbalanced()
    with pytest.raises(InputDataError):
        Holdout().splits(ds, -1)
    reg = Dataset.from_frame(
        pd.DataFrame({"x": np.arange(50.0), "y": np.linspace(0, 1, 50)}), "y", name="r", source="test"
    )
    with pytest.raises(InputDataError, match="regression"):
        Holdout().splits(reg, 0)


@pytest.mark.parametrize("base", [Holdout(), ReshuffledHoldout(0.6, 0.2, 0.2, iteration=3)])
def test_refit_trains_on_training_and_validation_rows_and_keeps_the_test_part(base):
    ds = _imbalanced()
    (b,) = base.splits(ds, 5)
    (r,) = RefitOnTrainValid(base).splits(ds, 5)
    np.testing.assert_array_equal(r.train_idx, np.union1d(b.train_idx, b.valid_idx))
    np.testing.assert_array_equal(r.test_idx, b.test_idx)
    _assert_partition([r.train_idx, r.test_idx], ds.n_instances)
    assert (r.fold, r.repeat, r.split_seed) == (b.fold, b.repeat, b.split_seed)


def test_refit_needs_a_test_part():
    with pytest.raises(InputDataError, match="no test part"):
        RefitOnTrainValid(Holdout(0.8, 0.2, 0.0)).splits(_imbalanced(), 0)
    with pytest.raises(InputDataError):
        RefitOnTrainValid("holdout")


def test_cv_auto_is_five_folds_up_to_the_line():
    from metabo.evaluation.protocols import AUTO_CV_MAX_ROWS, resolve_cv

    assert resolve_cv("auto", AUTO_CV_MAX_ROWS) == 5
    assert resolve_cv("auto", AUTO_CV_MAX_ROWS + 1) is None
    assert resolve_cv(None, 10) is None and resolve_cv(7, 10) == 7
    for bad in (1, True, "3", 2.5):
        with pytest.raises(InputDataError, match="cv"):
            resolve_cv(bad, 10)


def test_search_protocol_cross_validates_every_non_test_row_once():
    from metabo.evaluation.protocols import parse_cv, search_protocol

    data = Dataset.from_frame(pd.DataFrame({"x": np.arange(100.0), "y": np.arange(100) % 3}), "y", name="d",
                              source="test")
    splits = search_protocol("auto", data.n_instances).splits(data, seed=4)
    assert len(splits) == 5
    test = splits[0].test_idx
    assert len(test) == 20 and all(np.array_equal(s.test_idx, test) for s in splits)
    valid = np.concatenate([s.valid_idx for s in splits])
    assert np.array_equal(np.sort(valid), np.setdiff1d(np.arange(100), test))  # a partition of the other 80
    for s in splits:
        assert not set(s.train_idx) & set(s.valid_idx) and not set(s.train_idx) & set(test)
    [holdout] = search_protocol(None, data.n_instances).splits(data, seed=4)
    assert (len(holdout.train_idx), len(holdout.valid_idx), len(holdout.test_idx)) == (60, 20, 20)
    assert search_protocol("auto", 10_000) == Holdout(0.6, 0.2, 0.2)
    assert search_protocol(3, 10, max_train=50) == KFold(3, test=0.2, max_train=50)
    assert (parse_cv("auto"), parse_cv("none"), parse_cv("4")) == ("auto", None, 4)
    with pytest.raises(InputDataError, match="--cv"):
        parse_cv("five")


def test_a_holdout_caps_its_evaluation_rows_without_touching_its_training_rows():
    """max_eval: stratified samples of the validation and test parts, drawn after the training
    rows (which stay those of the uncapped hold-out); the repr (runs.protocol) names it only
    when set, so labels of runs measured without it are unchanged."""
    y = np.r_[np.zeros(900), np.ones(90), np.full(10, 2)].astype(int)
    data = Dataset.from_frame(pd.DataFrame({"x": np.arange(1000.0), "y": y}), target="y", name="d", source="t")
    (whole,) = Holdout(max_train=300).splits(data, 4)
    (capped,) = Holdout(max_train=300, max_eval=50).splits(data, 4)
    assert np.array_equal(whole.train_idx, capped.train_idx)
    for part, full in ((capped.valid_idx, whole.valid_idx), (capped.test_idx, whole.test_idx)):
        assert len(part) == 50 and set(part) <= set(full) and set(y[part]) == {0, 1, 2}
    assert not set(capped.valid_idx) & set(capped.test_idx)
    (again,) = Holdout(max_train=300, max_eval=50).splits(data, 4)
    assert np.array_equal(again.valid_idx, capped.valid_idx) and np.array_equal(again.test_idx, capped.test_idx)
    assert repr(Holdout(max_train=2000)) == "Holdout(train=0.6, valid=0.2, test=0.2, stratified=True, max_train=2000)"
    assert repr(Holdout(max_eval=10)).endswith("max_train=None, max_eval=10)")
    (no_test,) = Holdout(0.8, 0.2, 0.0, max_eval=30).splits(data, 0)
    assert no_test.test_idx is None and len(no_test.valid_idx) == 30
    for bad in (0, -1, 2.5, True):
        with pytest.raises(InputDataError, match="max_eval"):
            Holdout(max_eval=bad)
