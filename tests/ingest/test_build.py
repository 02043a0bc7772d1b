"""`metabo kb build`: dense seeded configurations, every evaluation recorded, resumable."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from metabo.exceptions import InputDataError
from metabo.ingest.build import BuildSettings, build_knowledge_base, grid_digest, read_grid, sample_configurations
from metabo.kb import KnowledgeBase
from metabo.kb.canonical import canonical_json

ALGOS = ["knn", "decision_tree", "logistic_regression"]
DATASETS = ["sklearn:iris", "sklearn:wine"]


def _evaluations(path) -> int:
    with KnowledgeBase(path) as kb:
        return int(kb.query(  # an evaluation is one (dataset, configuration), whatever its folds
            "SELECT count(DISTINCT (dataset_id, config_id)) FROM runs WHERE metric = 'error_rate' "
            "AND source LIKE 'session:build-%'").iloc[0, 0])


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


def test_an_algorithm_added_later_joins_the_build_and_only_its_configurations_run(tmp_path):
    settings = BuildSettings(n_configs=3, time_limit=None, memory_limit_mb=None, metrics=("error_rate",))
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        first = build_knowledge_base(kb, DATASETS, ALGOS[:2], settings)
        assert first.evaluated == 12
        before = kb.query("SELECT run_id FROM runs ORDER BY 1")["run_id"].tolist()
        later = build_knowledge_base(kb, DATASETS, ALGOS, settings)  # the space grew by one algorithm
        assert later.evaluated == 6 and later.skipped_done == 12
        runs = kb.query("SELECT DISTINCT source, algorithm FROM runs")
        assert set(runs["source"]) == {f"session:{settings.session_id()}"}  # one build, grown
        assert set(runs["algorithm"]) == set(ALGOS)
        assert set(before) <= set(kb.query("SELECT run_id FROM runs")["run_id"])  # nothing measured again


@pytest.mark.slow
def test_build_on_tunes_protocol_measures_each_dataset_as_tune_would_in_round_robin_order(tmp_path):
    from metabo.evaluation.protocols import protocol_label, search_protocol

    settings = BuildSettings(n_configs=2, time_limit=None, memory_limit_mb=None, cv="auto",
                             metrics=("error_rate",))
    assert settings.session_id() != BuildSettings(n_configs=2, time_limit=None, memory_limit_mb=None,
                                                  metrics=("error_rate",)).session_id()
    seen: list[tuple[str, str]] = []
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        report = build_knowledge_base(kb, ["sklearn:iris", "sklearn:digits"], ["knn", "decision_tree"], settings,
                                      progress=lambda r: seen.append((r.task.algorithm, r.task.dataset_id)))
        assert report.evaluated == 8
        got = kb.query("SELECT d.n_instances, r.protocol, count(DISTINCT r.fold) AS folds, "
                       "count(DISTINCT r.config_id) AS configs FROM runs r JOIN datasets d USING (dataset_id) "
                       "WHERE metric = 'error_rate' GROUP BY ALL ORDER BY 1")
        # iris (150 rows): 5-fold CV of the 80% not kept for test; digits (1,797): the same rule
        assert got["protocol"].tolist() == [protocol_label(search_protocol("auto", n)) for n in got["n_instances"]]
        assert got["folds"].tolist() == [5, 5] and got["configs"].tolist() == [4, 4]
    # round robin: the first configuration of both algorithms on both datasets before any second one
    assert sorted(seen[:4]) == sorted(seen[4:]) and {a for a, _ in seen[:4]} == {"knn", "decision_tree"}
    with pytest.raises(InputDataError, match="cv"):
        build_knowledge_base(KnowledgeBase(tmp_path / "other.duckdb"), ["sklearn:iris"], ["knn"],
                             BuildSettings(cv=1))


def test_explicit_configurations_are_a_session_of_their_own_and_resume(tmp_path):
    import json

    path = tmp_path / "grid.json"
    k3, k7 = {"n_neighbors": 3, "weights": "uniform", "p": 2}, {"n_neighbors": 7, "weights": "distance", "p": 1}
    path.write_text(json.dumps([["knn", k3], {"algorithm": "knn", "params": k7}, ["knn", dict(reversed(k3.items()))],
                                ["gaussian_nb", {"var_smoothing": 1e-9}]]))
    grid = read_grid(path)
    assert sorted(grid) == ["gaussian_nb", "knn"] and len(grid["knn"]) == 2  # the duplicate kept once
    seeded = BuildSettings(n_configs=2, time_limit=None, memory_limit_mb=None)
    explicit = BuildSettings(n_configs=2, time_limit=None, memory_limit_mb=None, grid=grid_digest(grid))
    assert explicit.session_id() != seeded.session_id()
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        report = build_knowledge_base(kb, ["sklearn:iris"], list(grid), seeded, configurations=grid)
        assert report.evaluated == 3 and report.session_id == explicit.session_id()  # the grid sets the session
        params = kb.query("SELECT c.params FROM runs r JOIN configurations c USING (config_id) "
                          "WHERE r.metric = 'error_rate' AND c.algorithm = 'knn'")["params"]
        assert sorted(json.loads(p)["n_neighbors"] for p in params) == [3, 7]
        assert build_knowledge_base(kb, ["sklearn:iris"], list(grid), explicit, configurations=grid).evaluated == 0
        # a seeded build after it is a session of its own
        assert build_knowledge_base(kb, ["sklearn:iris"], ["knn"], seeded).session_id == seeded.session_id()
        with pytest.raises(InputDataError, match="the build names"):
            build_knowledge_base(kb, ["sklearn:iris"], ["knn"], explicit, configurations=grid)


@pytest.mark.parametrize("text, match", [
    ("not json", "cannot read"), ("[]", "non-empty"), ('[["knn"]]', "entry 0"),
    ('[["nope", {}]]', "entry 0"), ('[["knn", {"n_neighbors": 3}]]', "entry 0"), ('[[3, {}]]', "entry 0"),
    ('[["gaussian_nb", {"var_smoothing": 1e-9}], '
     '["knn", {"n_neighbors": -4, "weights": "uniform", "p": 2}]]', "entry 1"),
])
def test_a_bad_grid_file_is_refused_naming_the_entry(tmp_path, text, match):
    path = tmp_path / "grid.json"
    path.write_text(text)
    with pytest.raises(InputDataError, match=match):
        read_grid(path)


@pytest.mark.slow
def test_killed_half_way_then_rerun_ends_with_exactly_30(tmp_path):
    path = tmp_path / "kb.duckdb"
    cmd = [sys.executable, "-m", "metabo.cli.main", "kb", "build", *DATASETS, "--algorithms", *ALGOS,
           "--configs", "5", "--kb", str(path), "--time-limit", "30", "--batch-size", "4", "-v"]
    env = {**os.environ, "METABO_HOME": str(tmp_path / "home")}
    with KnowledgeBase(path):  # the CLI's --kb names an existing store (`metabo kb init PATH` makes one)
        pass
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


def test_n_jobs_beyond_the_cores_starts_no_more_workers_than_the_cores(tmp_path, monkeypatch):
    import metabo.evaluation.backends as backends
    import metabo.ingest.build as build_module

    monkeypatch.setattr(backends, "available_cores", lambda: 2)
    pools = []
    real = build_module.evaluate_many

    def many(tasks, *, n_jobs, backend, progress=None):
        pools.append(n_jobs)
        return real(tasks, n_jobs=n_jobs, backend=backend, progress=progress)

    monkeypatch.setattr(build_module, "evaluate_many", many)
    settings = BuildSettings(n_configs=2, time_limit=None, memory_limit_mb=None, keep_predictions=False)
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        report = build_knowledge_base(kb, DATASETS[:1], ALGOS[:1], settings, n_jobs=1000, backend="threading")
    assert report.evaluated == 2 and pools == [2]
