"""The fit-cost model of metabo.kb.costs: closed-form exponents, scaling, rescaling."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from metabo.kb.costs import observed_scale, predicted_fit_seconds, size_exponents
from metabo.optimizer.history import History, TrialRecord


def records(rows: list[tuple]) -> pd.DataFrame:
    columns = ["dataset_id", "config_id", "algorithm", "seconds", "rows", "features"]
    return pd.DataFrame([r if len(r) == 6 else (*r, np.nan) for r in rows], columns=columns)


def test_the_exponents_are_the_within_configuration_coefficients_on_log_rows_and_log_features():
    # svm: s = k_c n^1.8 d^0.5 for two configurations with different constants, on tasks whose
    # rows and features vary independently; tree: constant (fit overhead); knn: one size
    tasks = (("t0", 100.0, 4.0), ("t1", 400.0, 4.0), ("t2", 900.0, 16.0), ("t3", 200.0, 64.0))
    frame = records([(t, c, "svm", k * n ** 1.8 * d ** 0.5, n, d) for t, n, d in tasks
                     for c, k in (("c0", 1e-5), ("c1", 3e-4))]
                    + [(t, "c2", "tree", 0.02, n, d) for t, n, d in tasks[:2]]
                    + [("t0", "c3", "knn", 0.1, 100.0, 4.0)])
    exponents = size_exponents(frame)
    assert exponents["svm"] == pytest.approx((1.8, 0.5))
    assert exponents["tree"] == (0.0, 0.0)  # flat: overhead, up to the largest recorded table
    assert exponents["knn"] == (1.0, 0.0)  # one size: no evidence
    # without features the rows' slope alone
    rows_only = records([(t, c, "svm", k * n ** 1.8, n) for t, n, _ in tasks for c, k in (("c0", 1e-5), ("c1", 3e-4))])
    assert size_exponents(rows_only)["svm"] == pytest.approx((1.8, 0.0))


def test_predictions_scale_each_recorded_time_and_take_the_median_over_tasks():
    frame = records([("t0", "c0", "svm", 2.0, 100.0, 10.0), ("t1", "c0", "svm", 7.0, 200.0, 10.0),
                     ("t2", "c0", "svm", 1.0, 50.0, 10.0)])
    alpha, beta = size_exponents(frame)["svm"]
    assert beta == 0.0  # the features never vary
    # within the recorded sizes (at most 200 rows): each time scaled by (n / n_t)^alpha
    expected = sorted([2.0 * 1.5 ** alpha, 7.0 * 0.75 ** alpha, 1.0 * 3.0 ** alpha])[1]
    assert predicted_fit_seconds(frame, 150)["c0"] == pytest.approx(expected)
    # beyond the largest (200 rows): at least linear past it
    expected = sorted([2.0 * 2.0 ** alpha, 7.0, 1.0 * 4.0 ** alpha])[1] * 5.0 ** max(alpha, 1.0)
    assert predicted_fit_seconds(frame, 1000)["c0"] == pytest.approx(expected)
    assert predicted_fit_seconds(records([]), 100) == {}


def test_the_features_scale_the_prediction_by_their_exponent():
    tasks = (("t0", 100.0, 4.0), ("t1", 400.0, 4.0), ("t2", 100.0, 16.0))
    frame = records([(t, "c0", "svm", 1e-3 * n * d ** 0.5, n, d) for t, n, d in tasks])
    predicted = predicted_fit_seconds(frame, 200, 64)
    assert predicted["c0"] == pytest.approx(1e-3 * 200 * 64 ** 0.5)
    assert predicted_fit_seconds(frame, 200)["c0"] == pytest.approx(1e-3 * 200 * 4 ** 0.5)  # median task: d = 4


@pytest.mark.slow
def test_held_out_tasks_fit_seconds_are_predicted_within_a_factor_two():
    """Each task of the shipped knowledge base held out in turn: most of its configurations'
    recorded fit seconds are within a factor 2 of what the other tasks predict, without bias,
    and nearer than the other tasks' seconds taken as they are, blind to the table's size
    (``python scripts/bench_cost_model.py`` prints the same figures and the older model's,
    ``reports/cost-model``). The share depends on how loaded the machine was when the build
    recorded the fits: of the 44-round store's records, 0.63 of those made on quiet cores
    (rounds 1-10) are within 2x, 0.49-0.50 of those made beside other work; 0.54 in all,
    0.48 blind to size; the older model (rows only, alpha >= 1) reaches 0.42."""
    from metabo.kb import KnowledgeBase
    from metabo.kb.costs import recorded_fit_seconds
    from metabo.kb.parquet_io import import_parquet
    from metabo.kb.shipped import shipped_kb_path

    with KnowledgeBase(":memory:") as kb:
        import_parquet(kb, shipped_kb_path())
        tasks = kb.query("SELECT DISTINCT dataset_id FROM runs WHERE status = 'ok'")["dataset_id"].tolist()
        frame = recorded_fit_seconds(kb, tasks)
    errors, blind = [], []
    for task in tasks:
        held = frame[frame["dataset_id"] == task]
        rest = frame[(frame["dataset_id"] != task) & frame["config_id"].isin(held["config_id"])]
        as_recorded = rest.groupby("config_id")["seconds"].median()
        for (n, d), part in held.groupby(["rows", "features"]):  # a task built at two sizes: each
            predicted = predicted_fit_seconds(rest, int(n), int(d))
            known = [(c, s) for c, s in zip(part["config_id"], part["seconds"]) if c in predicted]
            errors += [np.log2(predicted[c] / s) for c, s in known]
            blind += [np.log2(as_recorded[c] / s) for c, s in known]
    errors, blind = np.asarray(errors), np.asarray(blind)
    assert len(errors) > 10_000
    share, share_blind = np.mean(np.abs(errors) <= 1), np.mean(np.abs(blind) <= 1)
    assert share > 0.5 and abs(np.median(errors)) < 0.25
    assert share > share_blind + 0.03 and np.median(np.abs(errors)) < np.median(np.abs(blind))


def test_the_observed_scale_is_the_median_ratio_clipped():
    h = History()
    for i, (cid, seconds) in enumerate((("a", 2.0), ("b", 3.0), ("c", 40.0), ("zz", 1.0))):
        h.add(TrialRecord(number=i, algorithm="x", params={}, config_id=cid, state="complete", value=0.1,
                          status="ok", fit_seconds=seconds))
    assert observed_scale(h, {"a": 1.0, "b": 1.0, "c": 1.0}) == pytest.approx(3.0)
    assert observed_scale(h, {"c": 1.0}) == 4.0  # clipped
    assert observed_scale(History(), {"a": 1.0}) == 1.0
    assert np.isfinite(observed_scale(h, {}))


def test_rows_scaling_follows_the_fitted_exponent_up_to_the_largest_table_and_is_linear_beyond():
    from metabo.kb.costs import RowsScaling
    from metabo.optimizer.budget import FINAL_FIT_MARGIN, final_fit_seconds

    # tree: s = 0.01 n^0.5 on 1,000 to 4,000 rows
    frame = records([(t, "c0", "tree", 0.01 * n ** 0.5, n) for t, n in (("t0", 1000.0), ("t1", 4000.0))])
    scaling = RowsScaling.from_records(frame)
    assert scaling("tree", 1000, 4000) == pytest.approx(2.0)  # (4000 / 1000)^0.5
    assert scaling("tree", 1000, 8000) == pytest.approx(2.0 * 2.0)  # then linear past 4,000 rows
    assert scaling("svm", 1000, 8000) == pytest.approx(8.0)  # no records: linear
    record = TrialRecord(number=0, algorithm="tree", params={}, config_id="c0", state="complete", value=0.1,
                         status="ok", fit_seconds=3.0, predict_seconds=0.5)
    assert final_fit_seconds(record, train_rows=1000, final_rows=4000, fits=1, scaling=scaling) == pytest.approx(
        FINAL_FIT_MARGIN * 3.0 * 2.0 + 0.5)
    assert final_fit_seconds(record, train_rows=1000, final_rows=4000, fits=1) == pytest.approx(
        FINAL_FIT_MARGIN * 3.0 * 4.0 + 0.5)
