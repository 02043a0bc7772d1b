"""Small and large batches of runs store the same rows under the same ids.

A batch of at most ``SMALL_BATCH`` rows is screened for repeats in Python and its new
configurations are passed as list parameters; a larger one is screened by hashes in
DuckDB and registered as Arrow; sets of at most ``MAX_CONSTANTS`` values are constants.
Whatever the path, the stored runs, their ids and the errors must be the same.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metabo.exceptions import InputDataError, UnknownAlgorithmError, UnknownDatasetError
from metabo.kb import KnowledgeBase
from metabo.kb._sql import MAX_CONSTANTS, SMALL_BATCH

COLUMNS = ("run_id, dataset_id, config_id, metric, value, fold, repeat, split_seed, fit_seconds, "
           "predict_seconds, status, message, source, fidelity, algorithm")


def _store(n_datasets: int = 1) -> KnowledgeBase:
    kb = KnowledgeBase(":memory:")
    kb.add_algorithms(["knn", "svm"])
    with kb.transaction():
        for i in range(n_datasets):
            kb.register_dataset(name=f"d{i}", source="test")
    return kb


def _stored(kb: KnowledgeBase) -> set[tuple]:
    return set(kb.connection.execute(f"SELECT {COLUMNS} FROM runs").fetchall())  # noqa: S608


def _row(k: int = 1, *, dataset: int = 0, fold: int = 0, seed: int | None = None,
         fidelity: float | None = None, source: str = "s", algorithm: str = "knn") -> dict:
    # the value is a function of the identity, so which of two repeated rows is kept
    # does not matter
    value = (k + 10 * fold + 100 * dataset + (seed or 0)) / 1000
    return {"dataset_id": f"test-d{dataset}", "algorithm": algorithm, "params": {"k": k},
            "metric": "error_rate", "value": value, "fold": fold, "split_seed": seed,
            "fidelity": fidelity, "source": source, "status": "ok", "fit_seconds": 0.5}


rows = st.builds(
    _row,
    st.integers(1, 3),
    fold=st.integers(0, 1),
    seed=st.sampled_from([None, 7]),
    fidelity=st.sampled_from([None, 0.5, 1.0]),
    source=st.sampled_from(["s", "t|u"]),
    algorithm=st.sampled_from(["knn", "svm"]),
)


@pytest.mark.slow
@settings(max_examples=30, deadline=None)
@given(batch=st.lists(rows, min_size=1, max_size=20))
def test_batch_row_by_row_and_large_batch_store_the_same_runs(batch):
    one = _store()
    n_batch = one.add_runs(batch)
    by_row = _store()
    ids = [by_row.add_run(**row) for row in batch]
    large = _store()
    n_large = large.add_runs(batch * (SMALL_BATCH // len(batch) + 1))  # repeats: the hash screen
    stored = _stored(one)
    assert stored == _stored(by_row) == _stored(large)
    assert n_batch == n_large == len(stored) == len(set(ids))
    assert {r[0] for r in stored} == set(ids)


def test_one_row_has_the_id_and_row_it_has_inside_small_and_large_batches():
    row = _row(2, fold=1, seed=3, fidelity=0.25)
    others = [_row(k, fold=f) for k in range(5, 10) for f in range(SMALL_BATCH // 5 + 1)]
    single, small, large = _store(), _store(), _store()
    run_id = single.add_run(**row)
    single_rows = _stored(single)
    small.add_runs([*others[:4], row])
    large.add_runs([*others, row])
    assert len(others) + 1 > SMALL_BATCH
    assert single_rows <= _stored(small)
    assert single_rows <= _stored(large)
    assert next(iter(single_rows))[0] == run_id


def test_a_repeated_row_in_a_small_batch_is_stored_once():
    kb = _store()
    assert kb.add_runs([_row(1), _row(2), _row(1)]) == 2
    assert kb.add_runs([_row(1)]) == 0


def test_configurations_one_by_one_and_in_bulk_get_the_same_ids():
    params = [{"k": k, "w": "uniform"} for k in range(SMALL_BATCH + 10)]
    bulk, single = _store(), _store()
    ids = bulk.add_configurations(["knn"] * len(params), params)
    assert ids == [single.add_configurations(["knn"], [p])[0] for p in params]
    query = "SELECT config_id, algorithm, params FROM configurations ORDER BY config_id"
    assert bulk.connection.execute(query).fetchall() == single.connection.execute(query).fetchall()
    assert bulk.add_configurations(["knn"] * len(params), params) == ids  # stored once


@pytest.mark.parametrize("n_datasets", [1, MAX_CONSTANTS + 3])
def test_unknown_ids_are_named_whether_constants_or_a_list(n_datasets):
    kb = _store(n_datasets)
    batch = [_row(1, dataset=i) for i in range(n_datasets)] + [{**_row(1), "dataset_id": "nope"}]
    with pytest.raises(UnknownDatasetError, match=r"unknown dataset\(s\) \['nope'\]; register it first"):
        kb.add_runs(batch)
    cid = kb.add_configurations(["knn"], [{"k": 1}])[0]
    by_id = [{**r, "config_id": cid} for r in batch[:-1]]
    by_id[-1]["config_id"] = "0000000000000000"
    for r in by_id:
        del r["algorithm"], r["params"]
    with pytest.raises(InputDataError, match=r"unknown configuration\(s\) \['0000000000000000'\]"):
        kb.add_runs(by_id)
    with pytest.raises(UnknownAlgorithmError, match=r"unknown algorithm\(s\) \['xgb'\]"):
        kb.add_runs([_row(1, algorithm="xgb")])
    assert kb.stats()["runs"] == 0
