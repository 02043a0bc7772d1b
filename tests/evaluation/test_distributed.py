"""Distributed evaluation on a Dask cluster started here (``distributed.LocalCluster``).

``metabo kb build`` and ``metabo tune`` on ``--backend dask`` give the same values as on
loky / sequential, through the library and the CLI; an unknown backend or a missing
package is a one-line error (exit code 2).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from metabo.cli.main import main
from metabo.evaluation.backends import backend_context
from metabo.evaluation.parallel import EvalTask, evaluate_many
from metabo.exceptions import BackendError, InputDataError
from metabo.ingest.build import BuildSettings, build_knowledge_base, sample_configurations
from metabo.kb import KnowledgeBase
from metabo.optimizer import tune
from metabo.space.algorithms import default_cash_space

distributed = pytest.importorskip("distributed")
dask = pytest.importorskip("dask")

ALGORITHMS = ["decision_tree", "knn"]
SETTINGS = BuildSettings(n_configs=3, seed=0, time_limit=30.0, memory_limit_mb=2048)


@pytest.fixture(scope="module")
def scheduler() -> Iterator[str]:
    """A two-worker local cluster; its workers fork per evaluation, so not daemonic."""
    with dask.config.set({"distributed.worker.daemon": False}):
        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=":0")
    try:
        yield cluster.scheduler_address
    finally:
        cluster.close()


def _runs(path) -> list[tuple]:
    with KnowledgeBase(path) as kb:
        df = kb.query("SELECT dataset_id, config_id, metric, fold, status, value FROM runs "
                      "ORDER BY dataset_id, config_id, metric, fold")
    return [tuple(row) for row in df.itertuples(index=False)]


def _trials(result) -> list[tuple]:
    return [(r.number, r.algorithm, r.config_id, r.status, r.value, r.test_value) for r in result.history]


@pytest.mark.slow
def test_build_on_dask_stores_the_runs_a_sequential_build_stores(tmp_path, scheduler):
    reports = {}
    for backend, address in (("sequential", None), ("dask", scheduler)):
        with KnowledgeBase(tmp_path / f"{backend}.duckdb") as kb:
            reports[backend] = build_knowledge_base(kb, ["sklearn:iris"], ALGORITHMS, SETTINGS, n_jobs=2,
                                                    backend=backend, scheduler=address, batch_size=2)
    assert reports["dask"].evaluated == reports["sequential"].evaluated == 6
    assert reports["dask"].by_status == {"ok": 6}
    runs = _runs(tmp_path / "dask.duckdb")
    assert len(runs) > 6 and runs == _runs(tmp_path / "sequential.duckdb")


@pytest.mark.slow
def test_tune_on_dask_gives_the_history_of_loky(scheduler):
    space = default_cash_space(ALGORITHMS)
    common = {"budget": 5, "space": space, "strategy": "random", "seed": 3, "n_jobs": 2}
    on_dask = tune("sklearn:iris", backend="dask", scheduler=scheduler, **common)
    on_loky = tune("sklearn:iris", backend="loky", **common)
    assert _trials(on_dask) == _trials(on_loky)
    assert len(on_dask.history.completed) == 5 and not on_dask.history.pending  # the last batch was cut to 1
    assert len({r.config_id for r in on_dask.history}) == 5


@pytest.mark.slow
def test_a_local_dask_cluster_is_started_and_closed_when_no_scheduler_is_given():
    params = sample_configurations("decision_tree", 2, 0)
    tasks = [EvalTask("iris", "sklearn:iris", "decision_tree", p, time_limit=30.0, tag=i) for i, p in enumerate(params)]
    with backend_context("dask", n_jobs=2):
        client = distributed.get_client()
        assert len(client.scheduler_info()["workers"]) == 2
        results = sorted(evaluate_many(tasks, n_jobs=2, backend="dask"), key=lambda r: r.task.tag)
    assert [r.evaluations[0].valid for r in results] == [
        r.evaluations[0].valid for r in evaluate_many(tasks, backend="sequential")]
    assert client.status == "closed"


@pytest.mark.slow
def test_cli_build_and_tune_on_a_dask_scheduler(tmp_path, scheduler, capsys):
    kb = str(tmp_path / "kb.duckdb")
    assert main(["kb", "init", kb]) == 0  # --kb names an existing store
    code = main(["kb", "build", "sklearn:iris", "--algorithms", "decision_tree", "--configs", "2",
                 "--backend", "dask", "--scheduler", scheduler, "--n-jobs", "2", "--kb", kb])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "2 evaluated" in out and "'ok': 2" in out
    code = main(["tune", "sklearn:iris", "--budget", "3", "--strategy", "random", "--algorithms", *ALGORITHMS,
                 "--backend", "dask", "--n-jobs", "2", "--scheduler", scheduler, "--session", "dist", "--kb", kb])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "session dist: 3 trials" in out
    with KnowledgeBase(kb) as store:
        n = store.query("SELECT count(*) AS n FROM runs WHERE source = 'session:dist' AND metric = 'error_rate'")
    assert int(n["n"][0]) == 3 * 5  # iris: 5-fold cross-validated trials


def test_unknown_backend_and_missing_packages_are_clear_errors(tmp_path, monkeypatch, capsys):
    kb = str(tmp_path / "kb.duckdb")
    assert main(["kb", "init", kb]) == 0  # --kb names an existing store
    tune_args = ["tune", "sklearn:iris", "--budget", "2", "--strategy", "random", "--algorithms", "knn", "--kb", kb]
    assert main([*tune_args, "--backend", "spark"]) == 2
    assert "unknown backend 'spark'; use one of loky, threading" in capsys.readouterr().err
    assert main(["kb", "build", "sklearn:iris", "--configs", "1", "--backend", "loky", "--scheduler",
                 "tcp://127.0.0.1:1", "--kb", kb]) == 2
    assert "for the dask and ray backends" in capsys.readouterr().err
    assert main([*tune_args, "--ensemble", "esmbo", "--n-jobs", "2"]) == 2
    assert "--ensemble evaluates one trial at a time" in capsys.readouterr().err

    monkeypatch.setitem(sys.modules, "ray", None)  # not installed, whether it is or not
    assert main([*tune_args, "--backend", "ray", "--n-jobs", "2"]) == 2
    assert "pip install 'metabo[ray]'" in capsys.readouterr().err
    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(BackendError, match=r"pip install 'metabo\[dask\]'"), backend_context("dask"):
        pass
    with pytest.raises(InputDataError, match="n_jobs must be a positive integer"), backend_context("loky", n_jobs=0):
        pass
