"""What :func:`~metabo.ingest.openml.ingest_openml` fetches: evaluations, setups, datasets.

:func:`list_evaluations_page` reads one page of ``evaluation/list`` itself (the XML the
client's ``openml._api_calls._perform_api_call`` returns, parsed here) instead of
``openml.evaluations.list_evaluations``: the client's listing also requests
``user/list`` to name the uploaders, and fails with ``KeyError`` when an uploader's
account was deleted (OpenML leaves it out of ``user/list``). Uploaders are not needed.
That private function is the reason for the ``openml`` version pin in ``pyproject.toml``.

:func:`fetch_setups` returns the setups OpenML answers with; one it leaves out (a
deleted setup) is simply not in the result, for the caller to flag.

:func:`fetch_dataset` reads a dataset's description and qualities; a dataset whose
qualities OpenML does not have (:data:`NO_QUALITIES`: codes 362, 363, 364) comes back
with empty qualities and the reason, matched on the error code (openml-python 0.15.1
compares the whole message of 362, which begins with the URL, so its own check never
matches). A dataset OpenML does not know (error 111) or does not show (112, private)
comes back as ``None``.
"""

from __future__ import annotations

import logging
import shutil
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import openml
import openml._api_calls
import pandas as pd
from openml.exceptions import OpenMLPrivateDatasetError, OpenMLServerException, OpenMLServerNoResult

from metabo.data.openml_client import RetryPolicy, call_openml
from metabo.exceptions import OpenMLResponseError

logger = logging.getLogger(__name__)

#: OpenML errors of ``data/qualities/{id}`` that mean "this dataset has no qualities".
NO_QUALITIES: frozenset[int] = frozenset({
    362,  # No qualities found
    363,  # Dataset not processed yet
    364,  # Dataset processed with error (the error is the additional information)
})
#: OpenML errors of ``data/{id}`` that mean "no such dataset" (unknown, or private).
UNAVAILABLE: frozenset[int] = frozenset({111, 112})
#: Columns of an evaluation page.
EVALUATION_COLUMNS: tuple[str, ...] = (
    "run_id", "task_id", "setup_id", "flow_id", "flow_name", "data_id", "function", "value",
)
_OML = "{http://openml.org/openml}"
_SETUP_CHUNK = 100  # setup ids per request (URL length)


@dataclass(frozen=True)
class OpenMLDatasetInfo:
    """A dataset's name, default target and qualities; ``missing``: why it has none."""

    name: str
    target: str | None
    qualities: dict[str, float] = field(default_factory=dict)
    missing: str | None = None


@dataclass(frozen=True)
class OpenMLSetupInfo:
    """A setup's flow (as the setup states it) and its parameter records."""

    flow_id: int
    parameters: list[dict[str, Any]] = field(default_factory=list)


def evaluations_endpoint(
    metric: str, offset: int, size: int, tasks: Iterable[int] | None, flows: Iterable[int] | None,
) -> str:
    """The ``evaluation/list`` call of one page."""
    endpoint = f"evaluation/list/function/{metric}/limit/{size}/offset/{offset}"
    if tasks:
        endpoint += "/task/" + ",".join(map(str, tasks))
    if flows:
        endpoint += "/flow/" + ",".join(map(str, flows))
    return endpoint


def list_evaluations_page(
    metric: str, offset: int, size: int, tasks: Iterable[int] | None, flows: Iterable[int] | None,
    retry: RetryPolicy,
) -> pd.DataFrame:
    """One page of evaluations (:data:`EVALUATION_COLUMNS`); empty past the end.

    ``value`` is NaN for an evaluation without one.
    """
    endpoint = evaluations_endpoint(metric, offset, size, tasks, flows)
    text = call_openml(_get_listing, endpoint, endpoint=endpoint, retry=retry)
    if text is None:
        return pd.DataFrame(columns=list(EVALUATION_COLUMNS))
    return parse_evaluations(text, endpoint)


def _get_listing(endpoint: str) -> str | None:
    try:
        return str(openml._api_calls._perform_api_call(endpoint, "get"))
    except OpenMLServerNoResult:  # OpenML's "no results" (542): past the end
        return None


def parse_evaluations(text: str, endpoint: str) -> pd.DataFrame:
    """The rows of an ``<oml:evaluations>`` document; :class:`OpenMLResponseError` if it is not one."""
    try:
        root = ET.fromstring(text)  # noqa: S314 - the document is parsed, never expanded into files
        if root.tag != f"{_OML}evaluations":
            raise ValueError(f"root element {root.tag!r}, not <oml:evaluations>")
        rows = [_evaluation_row(ev) for ev in root.findall(f"{_OML}evaluation")]
    except (ET.ParseError, ValueError, TypeError) as e:
        raise OpenMLResponseError(
            f"malformed response from OpenML endpoint {endpoint} ({type(e).__name__}: {e}); "
            "nothing of it was stored"
        ) from e
    return pd.DataFrame(rows, columns=list(EVALUATION_COLUMNS))


def _evaluation_row(ev: ET.Element) -> dict[str, Any]:
    def text(tag: str) -> str | None:
        return ev.findtext(f"{_OML}{tag}")

    value = text("value")
    return {
        "run_id": int(text("run_id")),  # type: ignore[arg-type]  # None: TypeError, malformed
        "task_id": int(text("task_id")),  # type: ignore[arg-type]
        "setup_id": int(text("setup_id")),  # type: ignore[arg-type]
        "flow_id": int(text("flow_id")),  # type: ignore[arg-type]
        "flow_name": str(text("flow_name") or ""),
        "data_id": int(text("data_id")),  # type: ignore[arg-type]
        "function": str(text("function") or ""),
        "value": float(value) if value not in (None, "") else np.nan,
    }


def fetch_setups(ids: Iterable[int], retry: RetryPolicy) -> dict[int, OpenMLSetupInfo]:
    """Setup id -> its flow and parameters, :data:`_SETUP_CHUNK` ids per request.

    A setup OpenML does not return (deleted) is left out of the result.
    """
    ids = sorted({int(i) for i in ids})
    out: dict[int, OpenMLSetupInfo] = {}
    for start in range(0, len(ids), _SETUP_CHUNK):
        chunk = ids[start: start + _SETUP_CHUNK]
        endpoint = f"setup/list/setup/{','.join(map(str, chunk))}"
        frame = call_openml(
            openml.setups.list_setups, endpoint=endpoint, retry=retry, setup=chunk,
            output_format="dataframe",
        )
        for sid, flow, params in zip(frame.get("setup_id", []), frame.get("flow_id", []),
                                     frame.get("parameters", []), strict=True):
            if int(sid) in chunk:
                out[int(sid)] = OpenMLSetupInfo(int(flow), list((params or {}).values()))
    return out


def fetch_dataset(did: int, retry: RetryPolicy) -> OpenMLDatasetInfo | None:
    """Name, default target and qualities of an OpenML dataset (no data download).

    ``None``: OpenML does not know the dataset or does not show it (:data:`UNAVAILABLE`).
    """
    return call_openml(_dataset, did, endpoint=f"data/{did} and data/qualities/{did}", retry=retry)


def _dataset(did: int) -> OpenMLDatasetInfo | None:
    try:
        try:
            ds = openml.datasets.get_dataset(
                did, download_data=False, download_qualities=False, download_features_meta_data=False,
            )
        except OpenMLPrivateDatasetError as e:
            logger.warning("OpenML dataset %d is private (%s); its runs are not stored", did, e)
            return None
        except OpenMLServerException as e:
            if e.code not in UNAVAILABLE:
                raise
            logger.warning("OpenML does not know dataset %d (error %d: %s); its runs are not stored",
                           did, e.code, e.message)
            return None
        name, target = str(ds.name), ds.default_target_attribute
        try:
            qualities = ds.qualities
        except OpenMLServerException as e:
            if e.code not in NO_QUALITIES:
                raise
            reason = f"OpenML error {e.code}: {e.message.removesuffix(' - None')}"
            logger.warning("OpenML dataset %d has no qualities (%s); stored without meta-features", did, reason)
            return OpenMLDatasetInfo(name, target, {}, reason)
    except BaseException:
        # the client caches what it downloaded before parsing it: drop a bad copy
        shutil.rmtree(Path(openml.config.get_cache_directory()) / "datasets" / str(did), ignore_errors=True)
        raise
    if not qualities:  # None: a client whose own check caught the "no qualities" answer
        logger.warning("OpenML dataset %d has no qualities; stored without meta-features", did)
        return OpenMLDatasetInfo(name, target, {}, "OpenML sent no qualities")
    return OpenMLDatasetInfo(name, target, dict(qualities))
