"""Routes of knowledge queries (suggestions, nearest tasks, transfer ranks) and of bulk
ingestion of runs."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Request

from metabo.service import knowledge
from metabo.service import schemas as s
from metabo.service.store import SerializedStore

router = APIRouter(tags=["knowledge"])
_ERRORS: dict[int | str, dict[str, Any]] = {code: {"model": s.ErrorOut} for code in (401, 404, 422)}


def _store(request: Request) -> SerializedStore:
    return request.app.state.manager.store  # type: ignore[no-any-return]


@router.post("/knowledge/suggestions", response_model=list[s.SuggestionOut], responses=_ERRORS,
             summary="Warm-start configurations for a task with these meta-features")
def suggestions(request: Request, body: s.SuggestIn) -> list[dict[str, Any]]:
    """Warm-start configurations for a new task (the default warm start's portfolio, or the nearest tasks' best)."""
    with _store(request).locked() as kb:
        return knowledge.suggestions(kb, body.meta_features, k=body.k, algorithms=body.algorithms,
                                     metric=body.metric, exclude=body.exclude)


@router.post("/knowledge/nearest", response_model=list[s.NearestOut], responses=_ERRORS,
             summary="The stored tasks nearest in meta-feature space")
def nearest(request: Request, body: s.NearestIn) -> list[dict[str, Any]]:
    """The stored tasks nearest the given meta-features."""
    with _store(request).locked() as kb:
        return knowledge.nearest(kb, body.meta_features, k=body.k, exclude=body.exclude)


@router.get("/knowledge/ranks/{algorithm}", response_model=s.RanksOut, responses=_ERRORS,
            summary="An algorithm's configurations by mean rank across tasks, and a greedy portfolio")
def ranks(
    request: Request, algorithm: Annotated[str, Path(min_length=1, max_length=200)],
    metric: Annotated[str, Query(pattern=s.METRIC_PATTERN)] = "error_rate",
    top: Annotated[int, Query(ge=1, le=10_000)] = 10, k: Annotated[int, Query(ge=1, le=100)] = 5,
    min_tasks: Annotated[int | None, Query(ge=1)] = None,
) -> dict[str, Any]:
    """An algorithm's recorded configurations by mean rank across tasks."""
    with _store(request).locked() as kb:
        return knowledge.ranks(kb, algorithm, metric=metric, top=top, k=k, min_tasks=min_tasks)


@router.post("/runs", response_model=s.IngestOut, responses=_ERRORS, tags=["ingest"],
             summary="Store runs in bulk, all or none")
def ingest(request: Request, body: s.IngestIn) -> s.IngestOut:
    """Store runs (idempotent: the same runs sent twice are stored once)."""
    runs = [r.model_dump() for r in body.runs]
    with _store(request).locked() as kb:
        inserted = knowledge.ingest_runs(kb, runs, source=body.source)
    return s.IngestOut(received=len(runs), inserted=inserted)
