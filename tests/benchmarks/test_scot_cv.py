"""SCoT's meta-cross-validation protocol on a tiny dense set of past runs: the folds
partition the datasets, a fold's datasets never reach its methods' past, collaborative and
separate runs pick among the same candidates, the summary's collaborative-vs-separate table."""

from __future__ import annotations

import argparse
import json
import logging
import math

import numpy as np
import pandas as pd
import pytest

from benchmarks import scot_cv
from benchmarks.scot_cv import fold_lookups, meta_folds, run_fold, summarize_runs
from metabo.exceptions import InputDataError
from metabo.kb import KnowledgeBase
from metabo.kb.canonical import config_id
from metabo.kb.past import PastRuns
from metabo.testing.problems import two_algorithm_problem

SPACE, OBJECTIVE = two_algorithm_problem()
FAST = {"n_random": 50, "n_local": 2, "gp_restarts": 0, "max_points_per_task": 10, "max_gp_points": 40}
N_TASKS = 10


def make_past(n_configs: int = 14, drop: tuple[str, int] | None = None) -> PastRuns:
    """``N_TASKS`` tasks, the same configurations on each (``drop``: task, config not run)."""
    configs = SPACE.sample(np.random.default_rng(0), n_configs)
    rows = []
    for k in range(N_TASKS):
        for i, (a, p) in enumerate(configs):
            if drop == (f"t{k}", i):
                continue
            rows.append((f"t{k}", a, p, (1 + 0.1 * k) * OBJECTIVE(a, p) + 0.2 * k))
    frame = pd.DataFrame(rows, columns=["dataset_id", "algorithm", "params", "value"])
    frame["config_id"] = [config_id(a, p) for a, p in zip(frame["algorithm"], frame["params"])]
    ks = range(N_TASKS)
    mf = pd.DataFrame({"scot_K": [2.0 + k % 3 for k in ks], "scot_log_d": [1.0 + 0.1 * k for k in ks],
                       "scot_log_n_over_d": [3.0 - 0.1 * k for k in ks]}, index=[f"t{k}" for k in ks])
    return PastRuns.from_frame(frame, meta_features=mf)


def test_meta_folds_partition_seeded():
    tasks = [f"t{k}" for k in range(11)]
    folds = meta_folds(tasks, 5, seed=3)
    assert len(folds) == 5 and sorted(len(f) for f in folds) == [2, 2, 2, 2, 3]
    assert sorted(t for f in folds for t in f) == sorted(tasks)  # a partition: each dataset once
    assert meta_folds(list(reversed(tasks)), 5, seed=3) == folds  # a function of the set and the seed
    assert meta_folds(tasks, 5, seed=4) != folds
    with pytest.raises(InputDataError):
        meta_folds(tasks[:3], 5)


def test_fold_candidates_are_those_recorded_on_every_fold_dataset():
    past = make_past(drop=("t1", 0))
    fspace, lookups = fold_lookups(past, ["t1", "t2"], SPACE)
    assert len(fspace.candidates) == 13  # config 0 was not run on t1
    ids = set(fspace.candidate_ids())
    assert all(set(lk.values) == ids and lk.space is fspace for lk in lookups.values())
    fspace, _ = fold_lookups(past, ["t2", "t3"], SPACE)
    assert len(fspace.candidates) == 14


@pytest.fixture
def spies(monkeypatch):
    """Record the past (and the space) every SCoT and collaborative run is given."""
    seen: dict[str, list] = {"scot_past": [], "collab_past": [], "collab_space": []}
    real_scot, real_collab = scot_cv.SCoT, scot_cv.collaborative_tune

    def scot(past, meta, **kw):
        seen["scot_past"].append(set(past.tasks))
        return real_scot(past, meta, **kw)

    def collab(past, tasks, space, **kw):
        seen["collab_past"].append(set(past.tasks))
        seen["collab_space"].append(sorted(space.candidate_ids()))
        return real_collab(past, tasks, space, **kw)

    monkeypatch.setattr(scot_cv, "SCoT", scot)
    monkeypatch.setattr(scot_cv, "collaborative_tune", collab)
    return seen


def test_fold_datasets_never_in_the_past_and_same_candidates(spies):
    past = make_past(drop=("t4", 3))
    folds = meta_folds(past.tasks, 5, seed=0)
    k = next(i for i, f in enumerate(folds) if "t4" in f)
    fold = folds[k]
    runs = {m: run_fold(m, k, fold, 0, 4, past, SPACE, scot_settings=FAST) for m in scot_cv.METHODS}
    others = set(past.tasks) - set(fold)
    # the past of every SCoT (collaborative, separate, collaborative default) is exactly the other folds
    assert spies["collab_past"] == [others]
    assert spies["scot_past"] and all(p == others for p in spies["scot_past"])
    fspace, _ = fold_lookups(past, fold, SPACE)
    ids = set(fspace.candidate_ids())
    assert spies["collab_space"] == [sorted(ids)]  # the collaborative run's candidates
    for m, records in runs.items():
        assert [r["task"] for r in records] == sorted(fold)
        assert {r["candidates"] for r in records} == {records[0]["candidates"]}
        assert records[0]["candidates"] == runs["scot-collab"][0]["candidates"]
        assert all(r["past_tasks"] == len(others) for r in records)
        for r in records:  # every pick a distinct common candidate, its regret in [0, 1]
            picked = [config_id(a, p) for a, p in r["configs"]]
            assert set(picked) <= ids and len(set(picked)) == len(picked)
            assert len(r["values"]) == (1 if m in scot_cv.ONE_PICK else 4)
            assert all(0 <= x <= 1 for x in r["regret"]) and r["regret"] == sorted(r["regret"], reverse=True)


def test_collaborative_differs_from_separate_only_by_peers():
    past = make_past()
    fold = ["t0", "t5"]
    collab = run_fold("scot-collab", 0, fold, 0, 3, past, SPACE, scot_settings=FAST)
    sep = run_fold("scot-separate", 0, fold, 0, 3, past, SPACE, scot_settings=FAST)
    again = run_fold("scot-separate", 0, fold, 0, 3, past, SPACE, scot_settings=FAST)
    assert [r["configs"] for r in sep] == [r["configs"] for r in again]  # seeded
    # the fold's first dataset asks first, before any peer observation: the same first pick
    assert collab[0]["configs"][0] == sep[0]["configs"][0]


def write_kb(path, n_tasks: int = 6) -> list[str]:
    """A dense store of ``n_tasks`` tasks x 14 knn configurations (n_neighbors 1..14), the optimum
    moving with the task; its dataset ids."""
    ids = []
    with KnowledgeBase(path) as kb:
        kb.add_algorithms(["knn"])
        for k in range(n_tasks):
            ids.append(kb.register_dataset(name=f"t{k}", source="test"))
            kb.add_meta_features(ids[-1], {"scot_K": 2.0 + k % 3, "scot_log_d": 1.0 + 0.1 * k,
                                           "scot_log_n_over_d": 3.0 - 0.1 * k})
        kb.add_runs([dict(dataset_id=ids[k], algorithm="knn", params={"n_neighbors": n, "weights": "uniform", "p": 2},
                          metric="error_rate", value=0.1 + 0.01 * (n - 4 - k % 5) ** 2 + 0.05 * k, source="s")
                     for k in range(n_tasks) for n in range(1, 15)])
    return ids


def test_run_end_to_end_and_resume(tmp_path, caplog, monkeypatch):
    monkeypatch.setattr(scot_cv, "SCOT_SETTINGS", FAST)
    path = tmp_path / "kb.duckdb"
    ids = write_kb(path)  # 6 tasks: scipy's exact Wilcoxon with zero differences is slow beyond ~9
    args = argparse.Namespace(kb=str(path), methods=["scot-collab", "scot-separate"], folds=5,
                              fold_seed=0, seeds=1, iterations=3, resume=False, out=tmp_path / "out")
    assert scot_cv.run(args, "test") == 0
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert sorted(t for f in summary["folds"] for t in f) == sorted(ids)
    s = summary["summary"]
    assert s["n_tasks"] == 6 and set(s["collab_vs_separate"]) == {"1", "3"}
    row = s["collab_vs_separate"]["1"]
    # only a fold's second dataset can differ at its first pick (it sees its peer's): one fold of 2
    assert row["collab_better"] + row["separate_better"] <= 1 and 0 <= row["wilcoxon_p"] <= 1
    text = (tmp_path / "out" / "summary.txt").read_text()
    assert "What was run vs the paper" in text and "Collaborative vs separate SCoT" in text
    assert (tmp_path / "out" / "curves.png").exists()
    lines = (tmp_path / "out" / "runs.jsonl").read_text().splitlines()
    assert len(lines) == 2 * 6
    caplog.clear()
    args.resume = True  # resuming runs nothing more
    with caplog.at_level(logging.INFO, logger="benchmarks"):
        assert scot_cv.run(args, "test") == 0
    assert "0 (seed, fold, method) units to do (10 kept)" in caplog.text
    assert (tmp_path / "out" / "runs.jsonl").read_text().splitlines() == lines


def test_summarize_runs_counts_wins():
    runs = []
    for t, (c, s) in {"a": (0.0, 0.5), "b": (0.1, 0.2), "c": (0.3, 0.3)}.items():
        runs.append({"method": "scot-collab", "task": t, "regret": [c], "seconds_per_suggestion": 1.0})
        runs.append({"method": "scot-separate", "task": t, "regret": [s], "seconds_per_suggestion": 1.0})
    summary, text = summarize_runs(runs, ["scot-collab", "scot-separate"], 1)
    row = summary["collab_vs_separate"]["1"]
    assert (row["collab_better"], row["separate_better"]) == (2, 0)
    assert math.isclose(row["collab"], 0.4 / 3) and math.isclose(row["separate"], 1.0 / 3)
