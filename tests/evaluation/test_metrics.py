"""Metrics: closed forms, lower-is-better, alignment of missing classes."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from metabo.evaluation.metrics import (
    METRICS,
    align_proba,
    balanced_error_rate,
    error_rate,
    first_argmax,
    get_metric,
    log_loss,
    one_minus_auc,
    ovr_balanced_error_rate,
    transfer_metrics,
)
from metabo.exceptions import InputDataError


def test_error_rate_by_hand_from_labels_and_from_probabilities():
    y = np.array([0, 1, 1, 0])
    assert error_rate(y, y_pred=np.array([0, 1, 0, 0])) == pytest.approx(0.25)
    proba = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4], [0.7, 0.3]])
    assert error_rate(y, proba) == pytest.approx(0.25)


def test_balanced_error_rate_by_hand():
    # class 0: 3 rows all right (error 0); class 1: 1 row wrong (error 1) -> mean 0.5
    y = np.array([0, 0, 0, 1])
    pred = np.zeros(4, dtype=int)
    assert error_rate(y, y_pred=pred) == pytest.approx(0.25)
    assert balanced_error_rate(y, y_pred=pred) == pytest.approx(0.5)


def test_ovr_balanced_error_rate_is_oboes_ber():
    rng = np.random.default_rng(0)
    y, pred = rng.integers(0, 2, 50), rng.integers(0, 2, 50)
    assert ovr_balanced_error_rate(y, y_pred=pred) == pytest.approx(balanced_error_rate(y, y_pred=pred))
    # three classes, a constant prediction: class 0 has TPR 1, TNR 0; the others TPR 0, TNR 1
    y3 = np.array([0, 1, 2, 2])
    assert ovr_balanced_error_rate(y3, y_pred=np.zeros(4, dtype=int)) == pytest.approx(0.5)
    assert balanced_error_rate(y3, y_pred=np.zeros(4, dtype=int)) == pytest.approx(2 / 3)
    # by hand: class 0 TPR 1 TNR 2/3 -> 1/6; class 1 TPR 0 TNR 1 -> 1/2; class 2 TPR 1 TNR 1 -> 0
    assert ovr_balanced_error_rate(y3, y_pred=np.array([0, 0, 2, 2])) == pytest.approx((1 / 6 + 1 / 2) / 3)


def test_transfer_metrics_put_the_objective_first():
    assert transfer_metrics("error_rate") == ("error_rate", "balanced_error_rate", "ovr_balanced_error_rate")
    assert transfer_metrics("ovr_balanced_error_rate")[0] == "ovr_balanced_error_rate"
    assert transfer_metrics("log_loss") == ("log_loss",)


def test_log_loss_of_perfect_and_uniform_predictions():
    y = np.array([0, 1, 2, 1])
    assert log_loss(y, np.eye(3)[y]) == pytest.approx(0.0, abs=1e-12)
    assert log_loss(y, np.full((4, 3), 1 / 3)) == pytest.approx(math.log(3))


def test_log_loss_of_a_confident_mistake_is_finite():
    assert 30 < log_loss(np.array([0]), np.array([[0.0, 1.0]])) < 40


def test_auc_of_a_perfect_and_a_reversed_ranking():
    y = np.array([0, 0, 1, 1])
    score = np.array([0.1, 0.2, 0.7, 0.9])
    proba = np.column_stack([1 - score, score])
    assert one_minus_auc(y, proba) == pytest.approx(0.0)
    assert one_minus_auc(y, proba[:, ::-1]) == pytest.approx(1.0)


def test_multiclass_auc_is_macro_one_vs_rest():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 4, 200)
    proba = rng.dirichlet(np.ones(4), 200)
    expected = 1 - roc_auc_score(y, proba, multi_class="ovr", average="macro")
    assert one_minus_auc(y, proba) == pytest.approx(expected)
    assert one_minus_auc(y, np.eye(4)[y]) == pytest.approx(0.0)


def test_auc_skips_classes_absent_from_the_validation_set():
    y = np.array([0, 0, 1, 1])  # class 2 of 3 absent
    proba = np.array([[0.8, 0.1, 0.1], [0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.2, 0.7, 0.1]])
    assert one_minus_auc(y, proba) == pytest.approx(0.0)
    assert math.isnan(one_minus_auc(np.array([1, 1]), np.array([[0.3, 0.7], [0.6, 0.4]])))


def test_align_proba_puts_unseen_classes_at_zero():
    proba = np.array([[0.25, 0.75], [1.0, 0.0]])
    out = align_proba(proba, np.array([0, 2]), 3)
    np.testing.assert_allclose(out, [[0.25, 0.0, 0.75], [1.0, 0.0, 0.0]])
    with pytest.raises(InputDataError):
        align_proba(proba, np.array([0, 5]), 3)


def test_metrics_mapping_is_read_only_and_lookup_names_the_choices():
    assert set(METRICS) == {"error_rate", "balanced_error_rate", "ovr_balanced_error_rate", "log_loss", "one_minus_auc"}
    with pytest.raises(TypeError):
        METRICS["accuracy"] = error_rate  # type: ignore[index]
    assert get_metric("log_loss") is log_loss
    with pytest.raises(InputDataError, match="error_rate"):
        get_metric("accuracy")


def test_probability_metrics_refuse_labels_only():
    with pytest.raises(InputDataError, match="probabilities"):
        log_loss(np.array([0, 1]), y_pred=np.array([0, 1]))
    with pytest.raises(InputDataError):
        error_rate(np.array([0, 1]))


@pytest.mark.parametrize("seed", range(20))
def test_the_metrics_agree_with_scikit_learn(seed):
    """The metrics are computed directly (a search scores every fold of every trial); they
    agree with scikit-learn's on random predictions, ties, absent classes and predicted
    classes absent from y_true included."""
    import warnings

    from sklearn import metrics as skm

    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(2, 60)), int(rng.integers(2, 6))
    y = rng.integers(0, k, n)
    if len(np.unique(y)) < 2:
        y[0], y[1] = 0, 1
    P = rng.random((n, k)) ** 3
    P[rng.random(n) < 0.2] = 1.0  # rows of ties
    P[rng.random((n, k)) < 0.1] = 0.0  # zero probabilities: clipped
    P = P / P.sum(axis=1, keepdims=True)
    P = np.round(P, 2) if seed % 2 else P  # rounded scores: ties across rows
    pred = P.argmax(axis=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # sklearn: classes predicted but absent, rows not summing to 1
        assert error_rate(y, P) == pytest.approx(1 - skm.accuracy_score(y, pred), abs=1e-12)
        assert balanced_error_rate(y, P) == pytest.approx(1 - skm.balanced_accuracy_score(y, pred), abs=1e-12)
        assert log_loss(y, P) == pytest.approx(skm.log_loss(y, P, labels=np.arange(k)), rel=1e-9)
        present = np.unique(y)
        if k == 2:
            reference = skm.roc_auc_score(y == 1, P[:, 1])
        else:  # the macro one-vs-rest average over the classes present
            reference = np.mean([skm.roc_auc_score(y == c, P[:, c]) for c in present])
        assert one_minus_auc(y, P) == pytest.approx(1 - reference, abs=1e-12)


def test_log_loss_refuses_what_scikit_learn_refuses():
    with pytest.raises(InputDataError, match="class codes"):
        log_loss(np.array([0, 2]), np.array([[0.5, 0.5], [0.5, 0.5]]))
    with pytest.raises(InputDataError, match=r"\[0, 1\]"):
        log_loss(np.array([0, 1]), np.array([[1.5, -0.5], [0.5, 0.5]]))
    with pytest.raises(InputDataError, match="one length"):
        error_rate(np.array([0, 1, 1]), y_pred=np.array([0, 1]))


@pytest.mark.parametrize("K", [1, 2, 3, 6, 16, 17, 30])
def test_first_argmax_is_numpys_argmax_ties_included(K):
    """Values on a coarse grid make ties common: the first maximum wins, as numpy's."""
    a = np.round(np.random.default_rng(K).uniform(size=(7, 50, K)), 1)
    assert np.array_equal(first_argmax(a), a.argmax(axis=-1))
    assert np.array_equal(first_argmax(a[0]), a[0].argmax(axis=-1))
