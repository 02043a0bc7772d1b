"""RemoteOptimizer speaks Optimizer's ask/tell: the same loop, the same configurations
for the same seed; ServiceClient's queries and its exceptions carry the server's message."""

from __future__ import annotations

import math

import numpy as np
import pytest

from metabo.optimizer import Optimizer
from metabo.optimizer.history import History, Trial, TrialRecord
from metabo.service.client import (
    RemoteConflictError,
    RemoteInputError,
    RemoteNotFoundError,
    RemoteOptimizer,
    ServiceClient,
)
from metabo.space.algorithms import default_cash_space
from metabo.strategies import make_strategy


def _objective(algorithm: str, params: dict) -> float:
    return (len(algorithm) + sum(float(v) for v in params.values() if isinstance(v, (int, float)))) % 1.0


def _tune(opt, budget: int) -> list[TrialRecord]:
    """The loop a user writes, whichever optimizer it is handed."""
    told = []
    for _ in range(budget):
        trial = opt.ask()
        told.append(opt.tell(trial, _objective(trial.algorithm, dict(trial.params)), fit_seconds=0.01))
    return told


def test_the_same_loop_runs_locally_and_remotely_with_the_same_trials(client):
    space = default_cash_space(["knn", "decision_tree", "lda"])
    local = Optimizer(space, make_strategy("random", seed=7), seed=7)
    remote = RemoteOptimizer.create(dataset_id="service-toy", space=space, strategy="random", seed=7,
                                    client=ServiceClient(http=client))
    mine, theirs = _tune(local, 6), _tune(remote, 6)
    assert [(r.number, r.algorithm, dict(r.params), r.value) for r in mine] == \
        [(r.number, r.algorithm, dict(r.params), r.value) for r in theirs]
    assert remote.best().trial == local.best().trial
    history = remote.history
    assert isinstance(history, History) and len(history.completed) == 6
    assert history.y == pytest.approx(local.history.y)
    assert remote.session_id.startswith("study-")
    remote.finish()  # as Optimizer.finish: the study's status, read back by the API
    assert remote.client.study(remote.session_id)["status"] == "done"
    remote.ask()  # asking again reopens it
    assert remote.client.study(remote.session_id)["status"] == "running"
    remote.finish("failed")
    assert remote.client.study(remote.session_id)["status"] == "failed"


def test_remote_tell_takes_predictions_failures_and_numpy_values(client, study):
    remote = RemoteOptimizer(study_id=study, client=ServiceClient(http=client))
    a, b = remote.ask(), remote.ask()
    assert isinstance(a, Trial) and a.number == 0 and b.number == 1
    rec = remote.tell(a, np.float64(0.25), predictions=np.array([[0.1, 0.9], [0.8, 0.2]]))
    assert rec.value == 0.25 and rec.complete
    rec = remote.tell(b.number, math.nan, status="crash", message="segfault")
    assert math.isnan(rec.value) and rec.status == "crash" and rec.message == "segfault"
    with pytest.raises(RemoteConflictError, match="already told"):
        remote.tell(a, 0.1)
    with pytest.raises(RemoteInputError, match="needs a finite value"):
        remote.tell(remote.ask(), math.nan)  # NaN is sent as null: ok needs a value
    with pytest.raises(RemoteNotFoundError, match="no trial 99"):
        remote.tell(99, 0.1)
    with pytest.raises(RemoteNotFoundError, match="unknown study"):
        RemoteOptimizer(study_id="nope", client=ServiceClient(http=client)).ask()
    # the study's ensemble: one trial with predictions of these two rows, so the best alone
    out = remote.ensemble(np.array([1, 0]))
    assert out["kept"] == "single" and out["members"] == [{"number": 0, "weight": 1.0}]
    with pytest.raises(RemoteInputError, match="class indices"):
        remote.ensemble([0.5, 1])


def test_service_client_datasets_studies_and_ingestion(client):
    api = ServiceClient(http=client)
    dataset_id = api.add_dataset("mine", {"NumberOfInstances": 10, "ClassEntropy": float("nan")})
    assert dataset_id == "service-mine"
    remote = RemoteOptimizer.create(dataset_id=dataset_id, space=["lda"], strategy="random", study_id="x", client=api)
    assert remote.session_id == "x" and api.study("x")["algorithms"] == ["lda"]
    assert [s["study_id"] for s in api.studies()] == ["x"]
    run = {"dataset_id": dataset_id, "algorithm": "lda", "params": {"solver": "svd"}, "value": 0.1}
    assert api.ingest_runs([run], source="mine") == 1
    with pytest.raises(RemoteNotFoundError, match="unknown dataset"):
        api.ingest_runs([{**run, "dataset_id": "nope"}])
