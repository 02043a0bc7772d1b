"""The live transfer protocol on a tiny source store holding iris and three other datasets:
the source knowledge base is never written, the live trials are in the scratch store,
the split is the knowledge base's whatever the seed, agreement statistics on known orderings."""

from __future__ import annotations

import argparse
import hashlib
import json
import math

import numpy as np
import pytest

from benchmarks import transfer_live
from benchmarks.transfer_live import KBSplit, TuneSplit, agreement, best_so_far, choose_datasets, dataset_spec
from metabo.data.loaders import load_dataset
from metabo.evaluation.protocols import Holdout
from metabo.exceptions import InputDataError
from metabo.kb import KnowledgeBase


def sha(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


@pytest.fixture
def source(tmp_path):
    """A source store: sklearn:iris and three test datasets, 6 knn runs each."""
    path = tmp_path / "source.duckdb"
    with KnowledgeBase(path) as kb:
        kb.add_algorithms(["knn"])
        ids = [kb.register_dataset(name="iris", source="sklearn", n_instances=150)]
        ids += [kb.register_dataset(name=f"t{k}", source="test", n_instances=100 * (k + 1)) for k in range(3)]
        for k, i in enumerate(ids):
            kb.add_meta_features(i, {"scot_K": 3.0, "scot_log_d": 1.0 + 0.1 * k, "scot_log_n_over_d": 3.0})
        kb.add_runs([dict(dataset_id=i, algorithm="knn", params={"n_neighbors": n, "weights": "uniform", "p": 2},
                          metric="error_rate", value=0.05 + 0.01 * abs(n - 3 - k), source="s")
                     for k, i in enumerate(ids) for n in range(1, 7)])
    return path, ids


def test_spec_and_choice(source):
    path, ids = source
    with KnowledgeBase(path, read_only=True) as kb:
        assert dataset_spec(kb, ids[0]) == "sklearn:iris"
        assert choose_datasets(kb, ids, names=[ids[1]]) == [ids[1]]
        with pytest.raises(InputDataError):
            choose_datasets(kb, ids, names=["nope"])
        picked = choose_datasets(kb, ids, n=2, seed=1, max_instances=250)
        assert picked == choose_datasets(kb, ids, n=2, seed=1, max_instances=250) and len(picked) == 2
        assert set(picked) <= set(ids[:3])  # at most 250 rows: not t2 (300)
        with pytest.raises(InputDataError):
            choose_datasets(kb, ids, n=3, max_instances=150)
        assert choose_datasets(kb, ids, n=1, seed=0, min_instances=300, max_instances=300) == [ids[3]]


def test_kb_split_ignores_the_run_seed():
    iris = load_dataset("sklearn:iris")
    proto = KBSplit(Holdout(max_train=50), split_seed=0)
    a, b = proto.splits(iris, 0)[0], proto.splits(iris, 7)[0]
    ref = Holdout(max_train=50).splits(iris, 0)[0]
    for s in (a, b):
        assert np.array_equal(s.train_idx, ref.train_idx) and np.array_equal(s.valid_idx, ref.valid_idx)
        assert np.array_equal(s.test_idx, ref.test_idx) and s.n_train == 50


def test_tune_split_is_tunes_protocol_on_the_knowledge_bases_splits_whatever_the_run_seed():
    from metabo.evaluation.protocols import search_protocol

    for spec in ("sklearn:iris", "sklearn:breast_cancer"):
        data = load_dataset(spec)
        ref = search_protocol("auto", data.n_instances).splits(data, 0)  # what kb build --cv auto measured
        for seed in (0, 7):
            got = TuneSplit(split_seed=0).splits(data, seed)
            assert len(got) == len(ref) == 5
            for s, r in zip(got, ref):
                assert np.array_equal(s.train_idx, r.train_idx) and np.array_equal(s.valid_idx, r.valid_idx)
                assert np.array_equal(s.test_idx, r.test_idx)
    big = load_dataset("sklearn:digits")  # 1,797 rows: still cross-validated; a hold-out above 3,000
    assert len(TuneSplit().at_size(3001).splits(big, 0)) == 1 and len(TuneSplit().splits(big, 3)) == 5


def test_live_never_writes_the_source_and_records_in_scratch(source, tmp_path, capsys):
    path, ids = source
    before = sha(path)
    scratch = tmp_path / "scratch.duckdb"
    args = argparse.Namespace(kb=str(path), datasets=[ids[0]], n_datasets=1, dataset_seed=0, max_instances=None,
                              methods=["random", "gp"], seeds=1, iterations=3, lookup_runs=tmp_path / "none.jsonl",
                              scratch=scratch, resume=False, out=tmp_path / "live")
    assert transfer_live.run(args, "test") == 0
    assert sha(path) == before  # the source knowledge base is untouched
    with KnowledgeBase(path, read_only=True) as kb:
        assert int(kb.query("select count(*) from runs").iloc[0, 0]) == 24
        assert int(kb.query("select count(*) from sessions").iloc[0, 0]) == 0
    runs = [json.loads(line) for line in (tmp_path / "live" / "live_runs.jsonl").read_text().splitlines()]
    assert {(r["method"], r["task"]) for r in runs} == {("random", ids[0]), ("gp", ids[0])}
    with KnowledgeBase(scratch, read_only=True) as kb:
        sessions = set(kb.query("select session_id from sessions")["session_id"])
        assert sessions == {r["session_id"] for r in runs}
        for r in runs:  # each session's 3 configurations, recorded as runs of the session
            n = kb.query("select count(distinct config_id) from runs where source like ?", [f"%{r['session_id']}%"])
            assert int(n.iloc[0, 0]) == 3
    for r in runs:
        assert len(r["values"]) == 3 and r["valid_error"] == min(r["values"]) and 0 <= r["test_error"] <= 1
    lookups = [json.loads(line) for line in (tmp_path / "live" / "lookup_runs.jsonl").read_text().splitlines()]
    assert {(r["method"], r["task"]) for r in lookups} == {("random", ids[0]), ("gp", ids[0])}
    summary = json.loads((tmp_path / "live" / "summary.json").read_text())
    assert set(summary["summary"]["per_task"][ids[0]]) == {"random", "gp"}
    assert "What was run" in (tmp_path / "live" / "summary.txt").read_text()
    with pytest.raises(InputDataError):  # the scratch store can't be the source
        transfer_live.run(argparse.Namespace(**{**vars(args), "scratch": path, "resume": True}), "test")


def test_best_so_far_skips_failures():
    assert np.allclose(best_so_far([math.nan, 0.4, 0.5, math.nan, 0.2]), [math.nan, 0.4, 0.4, 0.4, 0.2],
                       equal_nan=True)


def test_agreement_on_known_orderings():
    methods = ["a", "b", "c"]
    live = {("t1", "a"): 0.1, ("t1", "b"): 0.2, ("t1", "c"): 0.3, ("t2", "a"): 0.3, ("t2", "b"): 0.2,
            ("t2", "c"): 0.1}
    same = {k: 2 * v + 1 for k, v in live.items()}  # the same ordering on another scale
    out = agreement(live, same, ["t1", "t2"], methods)
    assert out["mean_kendall"] == pytest.approx(1.0) and out["mean_spearman"] == pytest.approx(1.0)
    assert out["mean_rank_live"] == out["mean_rank_lookup"] == {"a": 2.0, "b": 2.0, "c": 2.0}
    flipped = {k: -v for k, v in live.items()}
    out = agreement(live, flipped, ["t1", "t2"], methods)
    assert out["per_task"]["t1"]["kendall"] == pytest.approx(-1.0)
    live_one = {k: v for k, v in live.items() if k[0] == "t1"}
    out = agreement(live_one, {k: v for k, v in same.items() if k[0] == "t1"}, ["t1"], methods)
    assert out["mean_rank_live"] == {"a": 1.0, "b": 2.0, "c": 3.0} and out["rank_spearman"] == pytest.approx(1.0)


def test_reproduced_compares_trials_at_recorded_configurations(source):
    from metabo.kb.past import PastRuns
    from metabo.space.algorithms import default_cash_space

    path, ids = source
    with KnowledgeBase(path, read_only=True) as kb:
        past = PastRuns.from_kb(kb)
    space = default_cash_space(["knn"])
    p3 = {"n_neighbors": 3, "weights": "uniform", "p": 2}
    recorded = 0.05 + 0.01 * abs(3 - 3)  # ids[0]'s value at n_neighbors 3
    runs = [{"task": ids[0], "configs": [["knn", p3], ["knn", {**p3, "n_neighbors": 20}]],
             "values": [recorded + 0.25, 0.5]}]
    out = transfer_live.reproduced(runs, past, space)
    assert (out["n_trials"], out["n_at_recorded"]) == (2, 1) and out["max_abs_diff"] == pytest.approx(0.25)
    runs[0]["values"][0] = recorded
    assert transfer_live.reproduced(runs, past, space)["max_abs_diff"] == pytest.approx(0.0)
