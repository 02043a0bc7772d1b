"""The fit-cost model of metabo.kb.costs: closed-form exponents, scaling, rescaling."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from metabo.kb.costs import observed_scale, predicted_fit_seconds, size_exponents
from metabo.optimizer.history import History, TrialRecord


def records(rows: list[tuple[str, str, str, float, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["dataset_id", "config_id", "algorithm", "seconds", "rows"])


def test_the_exponent_is_the_within_configuration_slope_of_log_seconds_on_log_rows():
    # svm: s = k_c n^1.8 for two configurations with different constants; tree: constant (overhead)
    frame = records([(t, c, "svm", k * n ** 1.8, n) for t, n in (("t0", 100.0), ("t1", 400.0), ("t2", 900.0))
                     for c, k in (("c0", 1e-5), ("c1", 3e-4))]
                    + [(t, "c2", "tree", 0.02, n) for t, n in (("t0", 100.0), ("t1", 400.0))]
                    + [("t0", "c3", "knn", 0.1, 100.0)])
    alpha = size_exponents(frame)
    assert alpha["svm"] == pytest.approx(1.8)
    assert alpha["tree"] == 1.0  # a flat slope is fit overhead: at least linear
    assert alpha["knn"] == 1.0  # one size: no evidence


def test_predictions_scale_each_recorded_time_and_take_the_median_over_tasks():
    frame = records([("t0", "c0", "svm", 1e-4 * 100.0 ** 2, 100.0), ("t1", "c0", "svm", 1e-4 * 200.0 ** 2, 200.0),
                     ("t0", "c1", "svm", 2.0, 100.0), ("t1", "c1", "svm", 7.0, 200.0),
                     ("t2", "c1", "svm", 1.0, 50.0)])
    alpha = size_exponents(frame)["svm"]
    predicted = predicted_fit_seconds(frame, 400)
    assert predicted["c0"] == pytest.approx(1e-4 * 400.0 ** alpha * (100.0 ** (2 - alpha)), rel=0.3)
    scaled = sorted([2.0 * 4.0 ** alpha, 7.0 * 2.0 ** alpha, 1.0 * 8.0 ** alpha])
    assert predicted["c1"] == pytest.approx(scaled[1])
    assert predicted_fit_seconds(records([]), 100) == {}


def test_the_observed_scale_is_the_median_ratio_clipped():
    h = History()
    for i, (cid, seconds) in enumerate((("a", 2.0), ("b", 3.0), ("c", 40.0), ("zz", 1.0))):
        h.add(TrialRecord(number=i, algorithm="x", params={}, config_id=cid, state="complete", value=0.1,
                          status="ok", fit_seconds=seconds))
    assert observed_scale(h, {"a": 1.0, "b": 1.0, "c": 1.0}) == pytest.approx(3.0)
    assert observed_scale(h, {"c": 1.0}) == 4.0  # clipped
    assert observed_scale(History(), {"a": 1.0}) == 1.0
    assert np.isfinite(observed_scale(h, {}))
