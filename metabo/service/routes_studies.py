"""Routes of datasets and studies: create a study, ask, tell, best, history."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request, status

from metabo.evaluation.metrics import get_metric
from metabo.exceptions import InputDataError, UnknownAlgorithmError
from metabo.service import schemas as s
from metabo.service.datasets import PreparedDataset, from_meta_features, from_upload
from metabo.service.spaces import resolve_space
from metabo.service.studies import StudyManager, StudySpec

router = APIRouter()
StudyId = Annotated[str, Path(pattern=s.STUDY_ID_PATTERN)]
_ERRORS: dict[int | str, dict[str, Any]] = {code: {"model": s.ErrorOut} for code in (401, 404, 409, 422)}


def _manager(request: Request) -> StudyManager:
    return request.app.state.manager  # type: ignore[no-any-return]


def _store_dataset(request: Request, prepared: PreparedDataset) -> s.DatasetOut:
    manager = _manager(request)
    with manager.store.transaction():
        dataset_id = prepared.store(manager.store.kb)
    return s.DatasetOut(dataset_id=dataset_id, n_meta_features=len(prepared.meta_features))


@router.post("/datasets", status_code=status.HTTP_201_CREATED, response_model=s.DatasetOut, responses=_ERRORS,
             tags=["datasets"], summary="Store a dataset described by its meta-features")
def add_dataset(request: Request, body: s.DatasetIn) -> s.DatasetOut:
    """Register a dataset by its description (meta-features), without its rows."""
    return _store_dataset(request, from_meta_features(body.name, body.meta_features))


@router.post("/datasets/upload", status_code=status.HTTP_201_CREATED, response_model=s.DatasetOut,
             responses=_ERRORS, tags=["datasets"], summary="Store uploaded CSV/Parquet data and its meta-features")
def upload_dataset(request: Request, body: s.UploadIn) -> s.DatasetOut:
    """Store an uploaded table (CSV, Parquet or ARFF) with its meta-features."""
    return _store_dataset(request, _upload(body))


def _upload(body: s.UploadIn) -> PreparedDataset:
    return from_upload(body.name, body.format, body.content_base64, body.target, landmarkers=body.landmarkers,
                       seed=body.seed)


@router.post("/studies", status_code=status.HTTP_201_CREATED, response_model=s.StudyOut, responses=_ERRORS,
             tags=["studies"], summary="Create a study for a dataset, a space and a strategy")
def create_study(request: Request, body: s.StudyIn) -> dict[str, Any]:
    """Open a study: a tuning session on a stored dataset with a strategy (``auto`` by default)."""
    get_metric(body.metric)  # a metric the project knows and minimizes, or 422 naming them
    try:
        space = resolve_space(body.space.algorithms, body.space.configspace)
    except UnknownAlgorithmError as e:  # a bad field of the body, not a missing resource
        raise InputDataError(str(e)) from None
    if body.dataset is not None:
        dataset: PreparedDataset | str = from_meta_features(body.dataset.name, body.dataset.meta_features)
    elif body.upload is not None:
        dataset = _upload(body.upload)
    else:
        assert body.dataset_id is not None
        dataset = body.dataset_id
    return _manager(request).create(StudySpec(dataset=dataset, space=space, strategy=body.strategy, seed=body.seed,
                                              metric=body.metric, study_id=body.study_id))


@router.get("/studies", response_model=list[s.StudyRowOut], tags=["studies"],
            summary="The stored studies, newest first")
def list_studies(request: Request) -> list[dict[str, Any]]:
    """Every study, with its state."""
    return [dict(r) for r in _manager(request).studies()]


@router.get("/studies/{study_id}", response_model=s.StudyOut, responses=_ERRORS, tags=["studies"],
            summary="A study's settings and trial counts")
def get_study(request: Request, study_id: StudyId) -> dict[str, Any]:
    """One study's summary."""
    return _manager(request).summary(study_id)


@router.post("/studies/{study_id}/ask", response_model=s.TrialOut, responses=_ERRORS, tags=["studies"],
             summary="The next configuration to evaluate (a new pending trial)")
def ask(request: Request, study_id: StudyId) -> s.TrialOut:
    """The next trial to evaluate (pending until told)."""
    trial = _manager(request).ask(study_id)
    return s.TrialOut(number=trial.number, algorithm=trial.algorithm, params=dict(trial.params),
                      config_id=trial.config_id)


@router.post("/studies/{study_id}/trials/{number}/tell", response_model=s.TrialRecordOut, responses=_ERRORS,
             tags=["studies"], summary="Record the outcome of a pending trial")
def tell(request: Request, study_id: StudyId, number: Annotated[int, Path(ge=0)], body: s.TellIn) -> dict[str, Any]:
    """Record a trial's outcome (value, or failure status without a value)."""
    record = _manager(request).tell(study_id, number, value=body.value, status=body.status,
                                    test_value=body.test_value, fit_seconds=body.fit_seconds,
                                    predict_seconds=body.predict_seconds, message=body.message,
                                    predictions=body.predictions)
    return record.to_json()


@router.post("/studies/{study_id}/finish", response_model=s.StudyOut, responses=_ERRORS, tags=["studies"],
             summary="Mark the study finished (done or failed); asking again reopens it")
def finish(request: Request, study_id: StudyId, body: s.FinishIn | None = None) -> dict[str, Any]:
    """Mark the study finished."""
    return _manager(request).finish(study_id, (body or s.FinishIn()).status)


@router.get("/studies/{study_id}/best", response_model=s.TrialRecordOut, responses=_ERRORS, tags=["studies"],
            summary="The selected trial: lowest value, or lowest GP posterior mean")
def best(request: Request, study_id: StudyId,
         select: Annotated[Literal["argmin", "posterior_mean"], Query()] = "argmin") -> dict[str, Any]:
    """The selected trial (arg min, or lowest posterior mean)."""
    return _manager(request).best(study_id, select).to_json()


@router.post("/studies/{study_id}/ensemble", response_model=s.EnsembleOut, responses=_ERRORS, tags=["studies"],
             summary="The post-hoc ensemble of the trials' stored predictions, or the best trial alone")
def ensemble(request: Request, study_id: StudyId, body: s.EnsembleIn) -> dict[str, Any]:
    """The post-hoc ensemble of the study's trials from their stored predictions."""
    return _manager(request).ensemble(study_id, [int(v) for v in body.labels], ensemble_size=body.ensemble_size,
                                      seed=body.seed)


@router.get("/studies/{study_id}/history", response_model=s.HistoryOut, responses=_ERRORS, tags=["studies"],
            summary="Every trial of the study, in the order asked")
def history(request: Request, study_id: StudyId) -> dict[str, Any]:
    """Every trial of the study, in order."""
    return {"study_id": study_id, "trials": [r.to_json() for r in _manager(request).history(study_id)]}
