"""``metabo suggest`` and ``metabo transfer`` on the shipped knowledge base."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from metabo.cli.main import main
from metabo.kb import KnowledgeBase
from metabo.kb.parquet_io import import_parquet

SHIPPED = Path(__file__).resolve().parents[2] / "data" / "kb"


@pytest.fixture(scope="module")
def shipped(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("shipped") / "kb.duckdb"
    with KnowledgeBase(path) as kb:
        import_parquet(kb, SHIPPED)
    return str(path)


def test_suggest_gives_the_nearest_tasks_best_configurations(shipped, capsys):
    code = main(["suggest", "sklearn:breast_cancer", "-k", "3", "--no-landmarkers", "--json", "--method", "knn",
                 "--kb", shipped])
    out, err = capsys.readouterr()
    assert code == 0, err
    rows = json.loads(out)
    assert len(rows) == 3
    assert rows[0]["task_name"] == "wdbc"  # KEEL's copy of the same data is the nearest task
    assert [r["distance"] for r in rows] == sorted(r["distance"] for r in rows)
    from metabo.kb.past import PastRuns

    with KnowledgeBase(shipped) as kb:  # the task's best configuration, measured as the warm start reads it
        past = PastRuns.from_kb(kb)  # (one protocol per task; a configuration's value: the mean of its folds)
    best = min(float(g.values.min()) for g in past.task_runs(rows[0]["from_task"]).values())
    assert rows[0]["error_rate_there"] == pytest.approx(best, abs=1e-6)

    code = main(["suggest", "sklearn:breast_cancer", "-k", "2", "--no-landmarkers", "--algorithms", "knn",
                 "--method", "knn", "--kb", shipped])
    out, _ = capsys.readouterr()
    assert code == 0 and out.count("knn {") == 2 and "adaboost" not in out


def test_suggest_by_default_gives_the_default_warm_starts_portfolio(shipped, capsys):
    from metabo.data.loaders import load_dataset
    from metabo.data.meta_features import compute_meta_features
    from metabo.kb.past import PastRuns
    from metabo.space.algorithms import default_cash_space
    from metabo.strategies.portfolio import PortfolioWarmStart

    code = main(["suggest", "sklearn:breast_cancer", "-k", "4", "--no-landmarkers", "--json", "--exclude-same",
                 "--kb", shipped])
    out, err = capsys.readouterr()
    assert code == 0, err
    rows = json.loads(out)
    with KnowledgeBase(shipped) as kb:
        past = PastRuns.from_kb(kb)
        same = kb.query("SELECT dataset_id FROM datasets WHERE fingerprint = ?",
                        [load_dataset("sklearn:breast_cancer").fingerprint])["dataset_id"].tolist()
    meta = compute_meta_features(load_dataset("sklearn:breast_cancer"), seed=0, landmarkers=False)
    expected = PortfolioWarmStart(past.without(same), meta).portfolio(default_cash_space(), 4)
    assert [(r["algorithm"], r["params"]) for r in rows] == [(a, p) for a, p in expected]
    assert len({r["algorithm"] for r in rows}) == 4  # each pick of an untried algorithm
    assert all(r["n_tasks"] >= 1 and 0 <= r["mean_regret"] <= 1 for r in rows)


def test_transfer_prints_ranks_portfolio_similarity_and_a_heatmap(shipped, capsys, tmp_path):
    png = tmp_path / "heat.png"
    code = main(["transfer", "knn", "-k", "3", "--top", "4", "--heatmap", str(png), "--kb", shipped])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "best by mean rank" in out and "greedy portfolio of 3" in out and "most similar task pairs" in out
    assert png.stat().st_size > 10_000
    code = main(["transfer", "knn", "--json", "--kb", shipped])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and len(data["portfolio"]) == 5 and -1 <= data["similar_pairs"][0]["tau"] <= 1


@pytest.mark.slow
def test_warm_vs_cold_demo_tunes_both_over_seeds_and_stores_every_session(shipped, capsys, tmp_path):
    from metabo.cli.warm_start_demo import warm_vs_cold

    with KnowledgeBase(shipped) as kb:
        curves = warm_vs_cold(kb, "sklearn:iris", budget=4, seeds=(0, 1), plot_path=tmp_path / "demo.png")
        sessions = kb.query("SELECT strategy, status FROM sessions WHERE dataset_id IS NOT NULL")
    out = capsys.readouterr().out
    assert set(curves) == {"warm start", "cold GP-BO"}
    assert all(c.shape == (2, 4) and (np.diff(c, axis=1) <= 0).all() for c in curves.values())  # best so far
    assert "warm start (warm): " in out and "[" in out and "seeds at 1" in out
    assert (tmp_path / "demo.png").stat().st_size > 5000
    assert sessions["strategy"].value_counts().to_dict() == {"warm": 2, "gp": 2}
    assert set(sessions["status"]) == {"done"}
