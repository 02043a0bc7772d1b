"""A Python client of the service, with the ask/tell vocabulary of the local optimizer.

:class:`RemoteOptimizer` has the names and signatures of :class:`metabo.optimizer.Optimizer`
that a tuning loop uses (``ask() -> Trial``, ``tell(trial, value, *, status=...)``,
``best(select)``, ``history``, ``session_id``), so moving a loop between local and remote
is one line::

    opt = Optimizer(space, make_strategy("gp"), kb=kb, dataset_id=dataset_id)   # local
    opt = RemoteOptimizer.create(URL, meta_features=mf, space=space, strategy="gp")  # remote
    for _ in range(budget):
        trial = opt.ask()
        opt.tell(trial, evaluate(trial.algorithm, trial.params))
    print(opt.best())

Several processes may run that loop on one study (``RemoteOptimizer(URL, study_id)``):
each gets its own configurations. :class:`ServiceClient` covers the rest of the API
(datasets, studies, knowledge queries, bulk ingestion). A refused request raises a
:class:`ServiceError` subclass carrying the status code and the server's message.
Only httpx is needed.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from metabo.exceptions import MetaboError
from metabo.optimizer.history import History, Trial, TrialRecord
from metabo.space.cash import CASHSpace, as_cash
from metabo.space.space import SearchSpace

DEFAULT_URL = "http://127.0.0.1:8000"


class ServiceError(MetaboError, RuntimeError):
    """The service refused or failed a request; ``status_code`` and the server's ``detail``."""

    def __init__(self, status_code: int, detail: str) -> None:
        super().__init__(f"{status_code}: {detail}")
        self.status_code, self.detail = status_code, detail


class RemoteInputError(ServiceError, ValueError):
    """400/422: the request was invalid (the message names the field or value)."""


class RemoteAuthError(ServiceError, PermissionError):
    """401: the token is missing or wrong."""


class RemoteNotFoundError(ServiceError, LookupError):
    """404: unknown study, trial, dataset or algorithm, or no result yet."""


class RemoteConflictError(ServiceError):
    """409: a study id taken, or a trial told twice."""


_ERRORS: Mapping[int, type[ServiceError]] = {400: RemoteInputError, 401: RemoteAuthError, 404: RemoteNotFoundError,
                                             409: RemoteConflictError, 422: RemoteInputError}


def _finite_or_none(value: float | None) -> float | None:
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


def space_request(space: CASHSpace | SearchSpace | Sequence[str] | None) -> dict[str, Any]:
    """The ``space`` field of a new study: nothing (the CASH space), algorithm names, or
    a space sent as ConfigSpace JSON."""
    if space is None:
        return {}
    if isinstance(space, (CASHSpace, SearchSpace)):
        return {"configspace": json.loads(as_cash(space).to_json())}
    return {"algorithms": [str(a) for a in space]}


class ServiceClient:
    """The service's HTTP API as methods (module docstring).

    Args:
        url: the service's base URL.
        token: the bearer token, if the service requires one.
        timeout: seconds per request (a warm-start study may take a while to create).
        http: an httpx client to use instead of a new one (e.g. FastAPI's TestClient).
    """

    def __init__(self, url: str = DEFAULT_URL, *, token: str | None = None, timeout: float = 120.0,
                 http: httpx.Client | None = None) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self._owns = http is None
        self.http = http if http is not None else httpx.Client(base_url=url, timeout=timeout)
        self.http.headers.update(headers)

    def __enter__(self) -> ServiceClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the HTTP session."""
        if self._owns:
            self.http.close()

    def request(self, method: str, path: str, *, json_body: Any = None, params: Mapping[str, Any] | None = None) -> Any:
        """The decoded JSON answer; a :class:`ServiceError` subclass for 4xx/5xx."""
        response = self.http.request(method, path, json=json_body, params=params)
        if response.status_code >= 400:
            try:
                detail = str(response.json().get("detail", response.text))
            except (ValueError, AttributeError):
                detail = response.text
            raise _ERRORS.get(response.status_code, ServiceError)(response.status_code, detail)
        return response.json()

    # ---------------------------------------------------------------- datasets
    def add_dataset(self, name: str, meta_features: Mapping[str, float | None]) -> str:
        """Store a dataset known by its meta-features; its id."""
        body = {"name": name, "meta_features": _meta(meta_features)}
        return str(self.request("POST", "/datasets", json_body=body)["dataset_id"])

    def upload_dataset(self, path: str | Path, target: str, *, name: str | None = None,
                       landmarkers: bool = True, seed: int = 0) -> str:
        """Upload a CSV or Parquet file; the service computes its meta-features. Its id."""
        return str(self.request("POST", "/datasets/upload",
                                json_body=upload_request(path, target, name=name, landmarkers=landmarkers,
                                                         seed=seed))["dataset_id"])

    # ---------------------------------------------------------------- studies
    def create_study(self, **fields: Any) -> dict[str, Any]:
        """``POST /studies`` with ``fields`` (see :class:`metabo.service.schemas.StudyIn`)."""
        return dict(self.request("POST", "/studies", json_body=fields))

    def studies(self) -> list[dict[str, Any]]:
        """Every study of the service (``GET /studies``)."""
        return list(self.request("GET", "/studies"))

    def study(self, study_id: str) -> dict[str, Any]:
        """One study's summary (``GET /studies/{study_id}``)."""
        return dict(self.request("GET", f"/studies/{study_id}"))

    # ---------------------------------------------------------------- knowledge
    def suggestions(self, meta_features: Mapping[str, float | None], *, k: int = 5,
                    algorithms: Sequence[str] | None = None, metric: str = "error_rate",
                    exclude: Sequence[str] = ()) -> list[dict[str, Any]]:
        """Warm-start configurations for a task with ``meta_features``, nearest task first."""
        body = {"meta_features": _meta(meta_features), "k": k, "metric": metric, "exclude": list(exclude),
                "algorithms": None if algorithms is None else list(algorithms)}
        return list(self.request("POST", "/knowledge/suggestions", json_body=body))

    def nearest(self, meta_features: Mapping[str, float | None], *, k: int = 5,
                exclude: Sequence[str] = ()) -> list[dict[str, Any]]:
        """The stored tasks nearest to ``meta_features``."""
        body = {"meta_features": _meta(meta_features), "k": k, "exclude": list(exclude)}
        return list(self.request("POST", "/knowledge/nearest", json_body=body))

    def ranks(self, algorithm: str, *, metric: str = "error_rate", top: int = 10, k: int = 5,
              min_tasks: int | None = None) -> dict[str, Any]:
        """``algorithm``'s configurations by mean rank across tasks, and a greedy portfolio."""
        params = {"metric": metric, "top": top, "k": k, **({} if min_tasks is None else {"min_tasks": min_tasks})}
        return dict(self.request("GET", f"/knowledge/ranks/{algorithm}", params=params))

    def ingest_runs(self, runs: Sequence[Mapping[str, Any]], *, source: str = "service") -> int:
        """Store runs in one transaction (all or none); how many were new."""
        body = {"runs": [dict(r) for r in runs], "source": source}
        return int(self.request("POST", "/runs", json_body=body)["inserted"])


def _meta(meta_features: Mapping[str, float | None]) -> dict[str, float | None]:
    return {str(k): _finite_or_none(v) for k, v in meta_features.items()}


def upload_request(path: str | Path, target: str, *, name: str | None = None, landmarkers: bool = True,
                   seed: int = 0) -> dict[str, Any]:
    """The body that uploads a CSV/Parquet file (its format from the extension)."""
    path = Path(path)
    fmt = "parquet" if path.suffix.lower() in (".parquet", ".pq") else "csv"
    return {"name": name or path.stem, "format": fmt, "content_base64": base64.b64encode(path.read_bytes()).decode(),
            "target": target, "landmarkers": landmarkers, "seed": seed}


class RemoteOptimizer:
    """A study of the service, driven like :class:`metabo.optimizer.Optimizer` (module docstring).

    Args:
        url: the service's base URL.
        study_id: an existing study (see :meth:`create` for a new one).
        token: the bearer token, if the service requires one.
        client: a :class:`ServiceClient` to share (``url``/``token`` then unused).
    """

    def __init__(self, url: str = DEFAULT_URL, study_id: str | None = None, *, token: str | None = None,
                 timeout: float = 120.0, client: ServiceClient | None = None) -> None:
        if not study_id:
            raise MetaboError("RemoteOptimizer needs a study_id; RemoteOptimizer.create(...) starts a new study")
        self.client = client or ServiceClient(url, token=token, timeout=timeout)
        self.session_id = study_id  # the Optimizer's name for it, so loops run unchanged on either

    @classmethod
    def create(
        cls, url: str = DEFAULT_URL, *, meta_features: Mapping[str, float | None] | None = None,
        dataset_name: str = "dataset", dataset_id: str | None = None, data: str | Path | None = None,
        target: str | None = None, space: CASHSpace | SearchSpace | Sequence[str] | None = None,
        strategy: str = "auto", seed: int = 0, metric: str = "error_rate", study_id: str | None = None,
        token: str | None = None, timeout: float = 120.0, client: ServiceClient | None = None,
    ) -> RemoteOptimizer:
        """A new study on the service for one dataset: a stored ``dataset_id``, or
        ``meta_features`` (stored as ``dataset_name``), or a CSV/Parquet file ``data`` with
        its ``target`` column; ``space``: the CASH space (None), algorithm names, or a space."""
        client = client or ServiceClient(url, token=token, timeout=timeout)
        body: dict[str, Any] = {"space": space_request(space), "strategy": strategy, "seed": seed, "metric": metric}
        if study_id is not None:
            body["study_id"] = study_id
        if dataset_id is not None:
            body["dataset_id"] = dataset_id
        if meta_features is not None:
            body["dataset"] = {"name": dataset_name, "meta_features": _meta(meta_features)}
        if data is not None:
            if target is None:
                raise MetaboError("uploading data needs target=<the target column>")
            body["upload"] = upload_request(data, target)
        info = client.create_study(**body)
        return cls(study_id=info["study_id"], client=client)

    def __enter__(self) -> RemoteOptimizer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the HTTP session."""
        self.client.close()

    def _path(self, tail: str) -> str:
        return f"/studies/{self.session_id}/{tail}"

    def ask(self) -> Trial:
        """The next configuration to evaluate (a new pending trial of the study)."""
        t = self.client.request("POST", self._path("ask"))
        return Trial(int(t["number"]), str(t["algorithm"]), dict(t["params"]), str(t["config_id"]))

    def tell(
        self, trial: Trial | int, value: float | None, *, status: str = "ok", test_value: float | None = None,
        fit_seconds: float | None = None, predict_seconds: float | None = None, message: str | None = None,
        predictions: Any = None,
    ) -> TrialRecord:
        """Report the outcome of a pending trial (as :meth:`Optimizer.tell`); ``predictions``:
        its validation outputs (n x K probabilities or n labels), stored with its run."""
        number = trial.number if isinstance(trial, Trial) else int(trial)
        body = {"value": _finite_or_none(value), "status": status, "test_value": _finite_or_none(test_value),
                "fit_seconds": fit_seconds, "predict_seconds": predict_seconds, "message": message,
                "predictions": None if predictions is None else np.asarray(predictions, dtype=float).tolist()}
        return TrialRecord.from_json(self.client.request("POST", self._path(f"trials/{number}/tell"), json_body=body))

    def finish(self, status: str = "done") -> None:
        """Mark the study finished, ``done`` or ``failed`` (as :meth:`Optimizer.finish`)."""
        self.client.request("POST", self._path("finish"), json_body={"status": status})

    @property
    def study_id(self) -> str:
        """The service's name for :attr:`session_id` (the study's id in its URLs)."""
        return self.session_id

    def best(self, select: str = "argmin") -> TrialRecord:
        """The selected trial: ``argmin`` or ``posterior_mean`` (as :meth:`Optimizer.best`)."""
        return TrialRecord.from_json(self.client.request("GET", self._path("best"), params={"select": select}))

    def ensemble(self, labels: Sequence[int] | np.ndarray, *, ensemble_size: int = 50, seed: int = 0
                 ) -> dict[str, Any]:
        """The post-hoc ensemble of the study's trials from their told predictions and the
        validation rows' true class indices ``labels`` (``POST /studies/{id}/ensemble``):
        ``kept``, ``combine``, ``members`` (trial numbers and weights) and why."""
        body = {"labels": np.asarray(labels).ravel().tolist(), "ensemble_size": int(ensemble_size),
                "seed": int(seed)}
        return self.client.request("POST", self._path("ensemble"), json_body=body)  # type: ignore[no-any-return]

    @property
    def history(self) -> History:
        """Every trial of the study (all clients'), in the order asked."""
        trials = self.client.request("GET", self._path("history"))["trials"]
        return History([TrialRecord.from_json(t) for t in trials])
