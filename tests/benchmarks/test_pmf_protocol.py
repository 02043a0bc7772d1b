"""The RLGP paper's protocol on PMF, end to end on the shipped PMF fixture (3 datasets)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from benchmarks import pmf_protocol as P
from metabo.kb import KnowledgeBase

FIXTURE = Path(__file__).parents[1] / "fixtures" / "metadatasets" / "deeppipe"


@pytest.fixture(scope="module")
def kb_path(tmp_path_factory: pytest.TempPathFactory) -> str:
    from metabo.metadatasets.deeppipe import PMF
    from metabo.metadatasets.ingest import ingest_metadataset

    path = tmp_path_factory.mktemp("pmf") / "kb.duckdb"
    with KnowledgeBase(path) as kb:
        ingest_metadataset(kb, PMF(FIXTURE))
        for i, d in enumerate(["openml-450", "openml-970", "openml-1562"]):
            kb.add_meta_features(d, {"scot_K": 2.0 + i, "scot_log_d": [1.0, 2.0, 0.5][i], "other": [3.0, 1.0, 7.0][i]})
    return str(path)


def _args(out: Path, kb: str, **kw: object) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    P.add_arguments(parser)
    argv = ["--kb", kb, "--out", str(out), "--datasets", "3", "--repetitions", "2", "--iterations", "2"]
    for k, v in kw.items():
        argv += [f"--{k.replace('_', '-')}", str(v)]
    return parser.parse_args(argv)


def test_the_matrix_holds_the_fixture_runs(kb_path: str) -> None:
    with KnowledgeBase(kb_path, read_only=True) as kb:
        m = P.MetaMatrix.from_kb(kb)
        n_runs = int(kb.query("SELECT count(*) AS n FROM runs")["n"][0])
    assert m.Y.shape == (3, 10) and int(np.isfinite(m.Y).sum()) == n_runs
    # each pipeline's flat configuration maps back to its stored id
    from metabo.kb.canonical import config_id

    assert all(config_id(*m.inferred.to_stored(a, p)) == cid for (a, p), cid in zip(m.configs, m.config_ids))


def test_end_to_end_properties(kb_path: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    given: list[tuple[str, str, set[str]]] = []
    make = P.make_method

    def spy(name: str, ctx: P.Context, task: str, pool: np.ndarray, seed: int) -> object:
        strategy = make(name, ctx, task, pool, seed)
        seen = set()
        for attr in ("past", "bank"):
            if hasattr(strategy, attr):
                seen |= set(getattr(strategy, attr).tasks)
        given.append((name, task, seen))
        return strategy

    monkeypatch.setattr(P, "make_method", spy)
    args = _args(tmp_path / "a", kb_path)
    assert P.run(args, "test") == 0
    runs = [json.loads(line) for line in (args.out / "pmf_runs.jsonl").read_text().splitlines()]
    assert len(runs) == 3 * 2 * len(P.METHODS)
    # the held-out task is never in the knowledge a method is given; others are
    assert {n for n, _, _ in given} == set(P.METHODS)
    assert all(task not in seen for _, task, seen in given)
    assert any(seen for name, _, seen in given if name in ("rgpe", "rlgp", "scot", "knn"))
    for r in runs:
        reg = np.array(r["regret"])
        assert len(reg) == 2 and np.all((reg >= 0) & (reg <= 1)) and np.all(np.diff(reg) <= 0)
        assert len(set(r["picks"])) == len(r["picks"])  # no pipeline evaluated twice
    summary = json.loads((args.out / "pmf_summary.json").read_text())
    assert set(summary["summary"]["at"]["1"]["wilcoxon"]) == set(P.METHODS) - {"gp"}
    assert (args.out / "pmf_curves.png").stat().st_size > 0
    assert "Figure 2" in (args.out / "pmf_summary.txt").read_text()

    # the summary recomputed from the runs alone is the same
    args.report_only = True
    assert P.run(args, "test") == 0
    assert json.loads((args.out / "pmf_summary.json").read_text())["summary"] == summary["summary"]

    # same seed => same picks
    again = _args(tmp_path / "b", kb_path)
    P.run(again, "test")
    other = {(r["method"], r["task"], r["seed"]): r["picks"]
             for r in map(json.loads, (again.out / "pmf_runs.jsonl").read_text().splitlines())}
    assert all(other[(r["method"], r["task"], r["seed"])] == r["picks"] for r in runs)


def test_resume_keeps_finished_runs(kb_path: str, tmp_path: Path) -> None:
    args = _args(tmp_path, kb_path, methods="gp,knn", repetitions=1)
    P.run(args, "test")
    before = (args.out / "pmf_runs.jsonl").read_text()
    args = _args(tmp_path, kb_path, methods="gp,knn", repetitions=2)
    args.resume = True
    P.run(args, "test")
    after = (args.out / "pmf_runs.jsonl").read_text()
    assert after.startswith(before) and len(after.splitlines()) == 2 * len(before.splitlines())


def test_draws_are_seeded(kb_path: str) -> None:
    with KnowledgeBase(kb_path, read_only=True) as kb:
        m = P.MetaMatrix.from_kb(kb)
    assert P.held_out_tasks(m, 2, 0) == P.held_out_tasks(m, 2, 0)
    assert sorted(P.held_out_tasks(m, 3, 1)) == sorted(m.tasks)
    assert P.held_out_tasks(m, 3, 1)[:2] == P.held_out_tasks(m, 2, 1)  # more datasets extend the draw
    task = m.tasks[0]
    pool = P.candidate_pool(m, task, 0, max_candidates=2, seed=0)
    assert len(pool) == 2 and np.array_equal(pool, P.candidate_pool(m, task, 0, max_candidates=2, seed=0))
    assert np.all(np.isfinite(m.Y[m.row(task), pool]))
    k1, k2 = P.knowledge(m, n_base=1, seed=0), P.knowledge(m, n_base=1, seed=0)
    assert all(len(g) == 1 for g in k1.groups.values())
    assert {k: g.config_ids for k, g in k1.groups.items()} == {k: g.config_ids for k, g in k2.groups.items()}


def test_knn_reads_only_candidates_and_imputes_missing_meta_features(kb_path: str) -> None:
    with KnowledgeBase(kb_path, read_only=True) as kb:
        m = P.MetaMatrix.from_kb(kb)
    task = m.tasks[0]
    pool = P.candidate_pool(m, task, 0, max_candidates=None)
    past = P.knn_past(m, task, pool)
    ids = {m.config_ids[j] for j in pool}
    assert task not in past.tasks and all(set(g.config_ids) <= ids for g in past.groups.values())
    ctx = P.Context(m, P.knowledge(m), None, None, 0)
    mean = P._meta(ctx, "openml-unknown", past)
    assert mean["scot_K"] == pytest.approx(past.meta_features["scot_K"].mean())


def test_a_bank_cache_spares_the_refit(kb_path: str, tmp_path: Path) -> None:
    cache = str(tmp_path / "cache.duckdb")
    first = P.build_context(kb_path, n_base=50, max_candidates=None, seed=0, bank=True, bank_cache=cache)
    second = P.build_context(kb_path, n_base=50, max_candidates=None, seed=0, bank=True, bank_cache=cache)
    assert first.bank.n_fitted_ == len(first.bank.members_) > 0
    assert second.bank.n_fitted_ == 0 and second.bank.n_loaded_ == len(first.bank.members_)
