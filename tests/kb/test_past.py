"""PastRuns: per (task, algorithm) mean values at each task's highest fidelity, views."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from metabo.exceptions import InputDataError
from metabo.kb import KnowledgeBase
from metabo.kb.past import PastRuns


@pytest.fixture
def kb(tmp_path):
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        kb.add_algorithms(["knn", "lda"])
        t1, t2 = (kb.register_dataset(name=name, source="test") for name in ("t1", "t2"))
        kb.add_meta_features(t1, {"n": 10.0})
        rows = []
        for task, k, value, fold, fidelity in [
            (t1, 1, 0.2, 0, 100.0), (t1, 1, 0.4, 1, 100.0),  # two folds: mean 0.3
            (t1, 1, 0.9, 0, 50.0),  # a lower fidelity of t1: left out
            (t1, 3, 0.1, 0, 100.0), (t2, 1, 0.5, 0, None),
        ]:
            rows.append({"dataset_id": task, "algorithm": "knn", "params": {"n_neighbors": k}, "metric": "error_rate",
                         "value": value, "fold": fold, "source": "test", "fidelity": fidelity})
        rows.append({"dataset_id": t2, "algorithm": "lda", "params": {}, "metric": "error_rate", "value": None,
                     "fold": 0, "source": "test", "status": "crash"})
        rows.append({"dataset_id": t2, "algorithm": "lda", "params": {}, "metric": "log_loss", "value": 0.7,
                     "fold": 0, "source": "test"})
        kb.add_runs(rows)
        yield kb, t1, t2


def test_means_over_folds_at_each_tasks_highest_fidelity(kb):
    kb, t1, t2 = kb
    past = PastRuns.from_kb(kb)
    assert past.tasks == tuple(sorted((t1, t2))) and past.algorithms == ("knn",)  # lda only crashed
    g = past[(t1, "knn")]
    by_k = {p["n_neighbors"]: v for p, v in zip(g.params, g.values)}
    assert by_k == pytest.approx({1: 0.3, 3: 0.1})
    assert past[(t2, "knn")].values.tolist() == [0.5]
    assert PastRuns.from_kb(kb, fidelity=50.0)[(t1, "knn")].values.tolist() == [0.9]
    assert list(past.meta_features.index) == [t1] and past.meta_features.loc[t1, "n"] == 10.0
    assert PastRuns.from_kb(kb, metric="log_loss").algorithms == ("lda",)


def test_also_reads_another_metric_only_for_tasks_without_the_objective(kb):
    kb, t1, t2 = kb
    t3 = kb.register_dataset(name="t3", source="test")
    kb.add_runs([{"dataset_id": t, "algorithm": "knn", "params": {"n_neighbors": 7}, "metric": m, "value": v,
                  "fold": 0, "source": "test"}
                 for t, m, v in [(t3, "ovr_balanced_error_rate", 0.25), (t3, "log_loss", 0.9),
                                 (t1, "ovr_balanced_error_rate", 0.8)]])
    past = PastRuns.from_kb(kb, also=("log_loss", "ovr_balanced_error_rate"))
    assert past.tasks == tuple(sorted((t1, t2, t3)))
    assert past[(t3, "knn")].values.tolist() == [0.9]  # its first metric in the order given
    assert 0.8 not in past[(t1, "knn")].values  # t1 recorded error_rate: nothing else of it is read
    assert PastRuns.from_kb(kb, also=("ovr_balanced_error_rate",))[(t3, "knn")].values.tolist() == [0.25]
    assert t3 not in PastRuns.from_kb(kb).tasks
    assert past.sources == {t1: "test", t2: "test", t3: "test"}
    assert past.without(t1).sources == {t2: "test", t3: "test"} and past.only(tasks=[t3]).sources == {t3: "test"}


def test_a_tasks_source_is_the_family_of_its_runs_sources():
    frame = pd.DataFrame({"dataset_id": ["a", "a", "a", "b"], "algorithm": "knn", "config_id": ["c1", "c2", "c3", "c1"],
                          "params": [{"k": 1}, {"k": 2}, {"k": 3}, {"k": 1}], "value": 0.5,
                          "source": ["session:x", "session:y", "oboe", "pmf"]})
    assert PastRuns.from_frame(frame).sources == {"a": "session", "b": "pmf"}


def test_views(kb):
    kb, t1, t2 = kb
    past = PastRuns.from_kb(kb)
    assert past.without(t1).tasks == (t2,) and past.without(t1).meta_features.empty
    assert past.only(tasks=[t1]).n_runs() == 2 and past.n_runs() == 3
    assert set(past.task_runs(t1)) == {"knn"}
    assert (t1, "knn") in past and (t1, "lda") not in past


def test_from_frame_refuses_missing_columns_and_nan():
    frame = pd.DataFrame({"dataset_id": ["a"], "algorithm": ["knn"], "config_id": ["c"], "params": ["{}"],
                          "value": [np.nan]})
    with pytest.raises(InputDataError, match="non-finite"):
        PastRuns.from_frame(frame)
    with pytest.raises(InputDataError, match="missing"):
        PastRuns.from_frame(frame.drop(columns="params"))


def test_each_task_contributes_one_protocol_the_one_tune_measures_it_by_when_stored(tmp_path):
    from metabo.evaluation.protocols import protocol_label, search_protocol

    small, large = (protocol_label(search_protocol("auto", n)) for n in (500, 5000))
    holdout = "Holdout(train=0.6, valid=0.2, test=0.2, stratified=True, max_train=2000)"
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        kb.add_algorithms(["knn"])
        both = kb.register_dataset(name="both", source="test", n_instances=500)
        only_old = kb.register_dataset(name="old", source="test", n_instances=500)
        big = kb.register_dataset(name="big", source="test", n_instances=5000)
        base = {"algorithm": "knn", "params": {"n_neighbors": 3}, "metric": "error_rate", "source": "test"}
        kb.add_runs([
            {**base, "dataset_id": both, "value": 0.9, "protocol": holdout, "fidelity": 300.0},
            # tune's 5 folds train on sizes a row apart: every fold counts
            *({**base, "dataset_id": both, "value": v, "fold": i, "protocol": small, "fidelity": 320.0 + (i % 2)}
              for i, v in enumerate([0.1, 0.2, 0.3, 0.4, 0.5])),
            {**base, "dataset_id": only_old, "value": 0.7, "protocol": holdout},
            {**base, "dataset_id": big, "value": 0.6, "protocol": holdout, "source": "session:old"},
            {**base, "dataset_id": big, "value": 0.2, "protocol": large, "source": "session:new"},
        ])
        past = PastRuns.from_kb(kb)
        assert past[(both, "knn")].values == pytest.approx([0.3])  # the mean of the 5 folds, not the hold-out
        assert past[(only_old, "knn")].values.tolist() == [0.7]  # nothing else measured it
        assert past[(big, "knn")].values.tolist() == [0.2]
        assert past.protocols == {both: small, only_old: holdout, big: large}
        assert past.without(big).protocols == {both: small, only_old: holdout}
        # a target measured on the hold-out prefers each task's hold-out runs of that kind
        assert PastRuns.from_kb(kb, prefer_cv=None)[(big, "knn")].values.tolist() == [0.2]  # tune's hold-out
        assert PastRuns.from_kb(kb, prefer_cv=None)[(both, "knn")].values == pytest.approx([0.3])  # most runs


def test_a_configurations_mean_adds_its_folds_in_fold_order_whatever_order_they_were_stored_in(tmp_path):
    """Equal configurations must tie exactly on every call (a last-bit difference breaks
    the warm start's ties one way or the other): the mean is the folds' values summed in
    fold order, not in the order the store happens to scan them. (On the shipped store,
    DuckDB's avg() gave last-bit differences from one call to the next, combining its
    threads' partial sums in varying order; a store this small is scanned by one thread,
    so this pins the contract on the storage order, which a scan-order sum would break.)"""
    values = {0: 0.1, 1: 0.2, 2: 0.6}
    assert (0.1 + 0.6) + 0.2 != (0.1 + 0.2) + 0.6  # the order is visible in the last bit
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        kb.add_algorithms(["knn"])
        t = kb.register_dataset(name="t", source="test")
        kb.add_runs([{"dataset_id": t, "algorithm": "knn", "params": {"n_neighbors": 3}, "metric": "error_rate",
                      "value": values[fold], "fold": fold, "source": "test"} for fold in (0, 2, 1)])
        got = PastRuns.from_kb(kb)[(t, "knn")].values[0]
    assert got == ((0.1 + 0.2) + 0.6) / 3
