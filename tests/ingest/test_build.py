"""`metabo kb build`: dense seeded configurations, every evaluation recorded, resumable."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from metabo.ingest.build import BuildSettings, build_knowledge_base, sample_configurations
from metabo.kb import KnowledgeBase
from metabo.kb.canonical import canonical_json

ALGOS = ["knn", "decision_tree", "logistic_regression"]
DATASETS = ["sklearn:iris", "sklearn:wine"]


def _evaluations(path) -> int:
    with KnowledgeBase(path) as kb:
        return int(kb.query(
            "SELECT count(*) FROM runs WHERE metric = 'error_rate' AND source LIKE 'session:build-%'").iloc[0, 0])


def test_configurations_are_seeded_distinct_and_shared():
    a = sample_configurations("knn", 5, seed=0)
    assert [canonical_json(p) for p in a] == [canonical_json(p) for p in sample_configurations("knn", 5, seed=0)]
    assert len({canonical_json(p) for p in a}) == 5
    assert a != sample_configurations("knn", 5, seed=1)
    assert len(sample_configurations("lda", 50, seed=0)) <= 50  # small spaces give what they have


def test_build_is_dense_and_idempotent(tmp_path):
    settings = BuildSettings(n_configs=5, time_limit=None, memory_limit_mb=None, keep_predictions=True)
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        report = build_knowledge_base(kb, DATASETS, ALGOS, settings)
        assert report.evaluated == 30 and report.skipped_done == 0
        again = build_knowledge_base(kb, DATASETS, ALGOS, settings)
        assert again.evaluated == 0 and again.skipped_done == 30
        matrix = kb.query(
            "SELECT c.algorithm, count(DISTINCT r.config_id) AS configs, count(DISTINCT r.dataset_id) AS tasks, "
            "count(*) AS n FROM runs r JOIN configurations c USING (config_id) WHERE metric = 'error_rate' "
            "GROUP BY 1 ORDER BY 1")
        assert matrix["configs"].tolist() == [5, 5, 5] and matrix["n"].tolist() == [10, 10, 10]
        assert set(kb.query("SELECT DISTINCT metric FROM runs")["metric"]) >= {"error_rate", "test_error_rate"}
        assert kb.stats()["predictions"] == 60  # valid and test probabilities of each evaluation
        assert kb.stats()["datasets"] == 2 and kb.stats()["meta_features"] > 60


@pytest.mark.slow
def test_killed_half_way_then_rerun_ends_with_exactly_30(tmp_path):
    path = tmp_path / "kb.duckdb"
    cmd = [sys.executable, "-m", "metabo.cli.main", "kb", "build", *DATASETS, "--algorithms", *ALGOS,
           "--configs", "5", "--kb", str(path), "--time-limit", "30", "--batch-size", "4", "-v"]
    env = {**os.environ, "METABO_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    recorded = 0
    try:
        for line in proc.stderr:  # the build logs each recorded batch
            if "recorded" in line and " of 30 evaluations" in line:
                recorded = int(line.split("recorded")[1].split()[0])
                if recorded >= 8:
                    proc.send_signal(signal.SIGKILL)
                    break
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert 8 <= recorded < 30, f"not killed half way (recorded {recorded})"
    partial = _evaluations(path)
    assert recorded <= partial < 30
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
    assert _evaluations(path) == 30
