"""A local, in-memory OpenML server for tests of code that uses the real ``openml`` client.

:class:`FakeOpenMLServer` answers OpenML's XML API v1 (``/api/v1/xml/...``) on
127.0.0.1 from objects the test builds: :class:`FakeDataset` (data as ARFF, features,
qualities), :class:`FakeTask`, :class:`FakeFlow`, :class:`FakeSetup` and
:class:`FakeRun` (whose ``evaluations`` feed the evaluation listing). Responses copy the
shapes of the real server (see ``openml-api-samples``) and of what the installed client
parses; they are gzip-compressed as OpenML's are.

Endpoints: ``data/{id}``, ``data/features/{id}``, ``data/qualities/{id}``,
``data/list``, ``task/{id}``, ``task/list``, ``estimationprocedure/list``,
``flow/{id}``, ``flow/list``, ``setup/{id}``, ``setup/list``, ``run/{id}``,
``run/list``, ``evaluation/list``, ``user/list``, and the ARFF download
``/data/download/{file_id}/{name}.arff`` that dataset descriptions point to (no
``parquet_url`` is announced, so the client reads ARFF). List calls page with
``/limit/N/offset/M``; a page past the end is HTTP 412 with OpenML's "no results" code
of that listing (542 evaluations, 674 setups, 372 datasets, 482 tasks, 500 flows,
512 runs), which the client's pager takes as the end.

Test hooks: :meth:`FakeOpenMLServer.fail_next` (the next K responses are HTTP 500, or
412 with an OpenML error code), :meth:`FakeOpenMLServer.malform` (truncated XML for an
endpoint) and :attr:`FakeOpenMLServer.requests` (the request log).

Usage::

    with FakeOpenMLServer() as server:
        server.add_dataset(FakeDataset.from_frame(61, "iris", frame, target="class"))
        openml.config.server = server.url
"""

from __future__ import annotations

import gzip
import hashlib
import json
import logging
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit
from xml.sax.saxutils import escape, quoteattr

import arff
import numpy as np
import pandas as pd

logger = logging.getLogger(__name__)

NS = 'xmlns:oml="http://openml.org/openml"'
API_PREFIX = "/api/v1/xml/"
SKLEARN_VERSION = "sklearn==1.5.0"
# OpenML "no results" codes of each listing (see openml/_api_calls.py).
NO_RESULT_CODES: dict[str, int] = {
    "evaluation": 542, "setup": 674, "data": 372, "task": 482, "flow": 500, "run": 512,
}
TASK_TYPES: dict[int, str] = {1: "Supervised Classification", 2: "Supervised Regression"}


class ApiError(Exception):
    """An OpenML error response: HTTP ``status`` with an ``<oml:error>`` body."""

    def __init__(self, code: int, message: str, status: int = 412) -> None:
        super().__init__(message)
        self.code, self.message, self.status = code, message, status


# ---------------------------------------------------------------------- the data model
@dataclass
class FakeDataset:
    """A dataset: its ARFF text, target and qualities (``None``: server has none)."""

    did: int
    name: str
    arff_text: str
    target: str | None
    qualities: dict[str, float] | None = None
    version: int = 1

    @property
    def file_id(self) -> int:
        return 100_000 + self.did

    @property
    def md5(self) -> str:
        return hashlib.md5(self.arff_text.encode("utf-8")).hexdigest()  # noqa: S324 - OpenML's checksum

    @classmethod
    def from_frame(
        cls,
        did: int,
        name: str,
        frame: pd.DataFrame,
        *,
        target: str,
        qualities: Mapping[str, float] | None = None,
        with_qualities: bool = True,
    ) -> FakeDataset:
        """Build a dataset from a table: object/category columns become nominal.

        ``qualities`` extend (and override) basic ones computed from the table;
        ``with_qualities=False`` makes the server answer "no qualities" (code 362).
        """
        attributes: list[tuple[str, Any]] = []
        columns = []
        for col in frame.columns:
            s = frame[col]
            if isinstance(s.dtype, pd.CategoricalDtype) or not pd.api.types.is_numeric_dtype(s):
                cats = (list(s.cat.categories) if isinstance(s.dtype, pd.CategoricalDtype)
                        else sorted(s.dropna().astype(str).unique()))
                attributes.append((str(col), [str(c) for c in cats]))
                columns.append([None if pd.isna(v) else str(v) for v in s])
            else:
                kind = "INTEGER" if pd.api.types.is_integer_dtype(s) else "REAL"
                attributes.append((str(col), kind))
                columns.append([None if pd.isna(v) else (int(v) if kind == "INTEGER" else float(v))
                                for v in s])
        rows = [list(r) for r in zip(*columns, strict=True)]
        text = arff.dumps({"relation": name, "attributes": attributes, "data": rows})
        computed = _basic_qualities(frame, target) if with_qualities else None
        if computed is not None and qualities:
            computed.update({k: float(v) for k, v in qualities.items()})
        return cls(did=did, name=name, arff_text=text, target=target, qualities=computed)

    def features(self) -> list[dict[str, Any]]:
        """Name, type, nominal values and missing count of each column (from the ARFF)."""
        parsed = arff.loads(self.arff_text)
        out = []
        for j, (name, kind) in enumerate(parsed["attributes"]):
            missing = sum(1 for row in parsed["data"] if row[j] is None)
            nominal = kind if isinstance(kind, list) else None
            dtype = "nominal" if nominal is not None else ("string" if kind == "STRING" else "numeric")
            out.append({"name": name, "data_type": dtype, "nominal": nominal, "missing": missing})
        return out


def _basic_qualities(frame: pd.DataFrame, target: str) -> dict[str, float]:
    y = frame[target]
    symbolic = sum(
        isinstance(frame[c].dtype, pd.CategoricalDtype) or not pd.api.types.is_numeric_dtype(frame[c])
        for c in frame.columns
    )
    counts = y.value_counts()
    nominal_target = isinstance(y.dtype, pd.CategoricalDtype) or not pd.api.types.is_numeric_dtype(y)
    return {
        "NumberOfInstances": float(len(frame)),
        "NumberOfFeatures": float(frame.shape[1]),
        "NumberOfClasses": float(y.nunique()) if nominal_target else 0.0,
        "NumberOfMissingValues": float(frame.isna().sum().sum()),
        "NumberOfInstancesWithMissingValues": float(frame.isna().any(axis=1).sum()),
        "NumberOfNumericFeatures": float(frame.shape[1] - symbolic),
        "NumberOfSymbolicFeatures": float(symbolic),
        "MajorityClassSize": float(counts.max()) if nominal_target else float("nan"),
        "MinorityClassSize": float(counts.min()) if nominal_target else float("nan"),
    }


@dataclass
class FakeTask:
    """A supervised task on a dataset (``target`` defaults to the dataset's)."""

    tid: int
    did: int
    target: str | None = None
    task_type_id: int = 1
    folds: int = 10
    repeats: int = 1
    measure: str = "predictive_accuracy"


@dataclass
class FakeFlow:
    """A flow: ``parameters`` maps names to default values as OpenML text."""

    fid: int
    name: str
    parameters: dict[str, str] = field(default_factory=dict)
    components: dict[str, FakeFlow] = field(default_factory=dict)
    external_version: str = ""
    dependencies: str = ""
    version: int = 1

    @property
    def is_sklearn(self) -> bool:
        return self.external_version.startswith("sklearn==") or ",sklearn==" in self.external_version

    def encode(self, value: Any) -> str:
        """A parameter value as OpenML stores it: JSON for scikit-learn flows, else text."""
        if self.is_sklearn:
            return json.dumps(value)
        return value if isinstance(value, str) else str(value)

    def walk(self, prefix: str = "") -> Iterable[tuple[str, FakeFlow]]:
        """This flow and its components, with the ``a__b__`` prefix of their parameters."""
        yield prefix, self
        for ident, comp in self.components.items():
            yield from comp.walk(f"{prefix}{ident}__")


def sklearn_flow(
    fid: int, class_path: str, defaults: Mapping[str, Any] | None = None,
    *, components: Mapping[str, FakeFlow] | None = None, name: str | None = None,
) -> FakeFlow:
    """A scikit-learn flow; ``defaults`` are Python values (stored JSON-encoded)."""
    flow = FakeFlow(
        fid=fid, name=name or class_path, components=dict(components or {}),
        external_version=f"openml==0.15.1,{SKLEARN_VERSION}",
        dependencies="sklearn==1.5.0\nnumpy>=1.6.1\nscipy>=0.9",
    )
    flow.parameters = {k: flow.encode(v) for k, v in (defaults or {}).items()}
    return flow


def pipeline_flow(fid: int, steps: Mapping[str, FakeFlow]) -> FakeFlow:
    """A ``sklearn.pipeline.Pipeline`` flow whose components are ``steps`` (in order)."""
    name = "sklearn.pipeline.Pipeline(" + ",".join(f"{k}={v.name}" for k, v in steps.items()) + ")"
    steps_json = [{"oml-python:serialized_object": "component_reference",
                   "value": {"key": k, "step_name": k}} for k in steps]
    return sklearn_flow(fid, "sklearn.pipeline.Pipeline", {"memory": None, "steps": steps_json,
                                                           "verbose": False},
                        components=steps, name=name)


def weka_flow(fid: int, name: str, defaults: Mapping[str, str]) -> FakeFlow:
    """A Weka flow (parameters as plain text)."""
    return FakeFlow(fid=fid, name=name, parameters=dict(defaults),
                    external_version="Weka_3.9.0_12024", dependencies="Weka_3.9.0")


@dataclass
class FakeSetup:
    """Parameter values of a flow; component parameters are keyed ``<step>__<name>``.

    Values are Python values (encoded as the flow stores them) or, for non-sklearn
    flows, text; parameters not given take the flow's default.
    """

    sid: int
    flow_id: int
    values: dict[str, Any] = field(default_factory=dict)


@dataclass
class FakeRun:
    """A run of a setup on a task with its aggregate ``evaluations`` (function -> value)."""

    rid: int
    task_id: int
    setup_id: int
    evaluations: dict[str, float | None] = field(default_factory=dict)
    uploader: int = 1
    upload_time: str = "2024-01-01 00:00:00"


@dataclass(frozen=True)
class LoggedRequest:
    """One request the server saw: ``endpoint`` is the API call (empty for downloads)."""

    method: str
    path: str
    endpoint: str
    status: int

    @property
    def filters(self) -> dict[str, str]:
        """``name -> value`` pairs after ``/list/`` (``limit``, ``offset``, ``task``, ...)."""
        return _list_filters(self.endpoint.split("/"))[1] if "/list" in self.endpoint else {}


@dataclass
class _Fault:
    remaining: int | None
    status: int
    code: int
    prefix: str | None
    malformed: bool = False

    def matches(self, endpoint: str, path: str) -> bool:
        if self.prefix is None:
            return True
        return path.startswith(self.prefix) if self.prefix.startswith("/") else endpoint.startswith(self.prefix)


# ---------------------------------------------------------------------- XML rendering
def _el(tag: str, value: Any) -> str:
    if value is None:
        return f"<oml:{tag}/>"
    return f"<oml:{tag}>{escape(str(value))}</oml:{tag}>"


def _fmt(value: float | None) -> str | None:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    return repr(float(value))


# What a proxy in front of a crashed backend sends (not well-formed XML: <hr>).
_HTML_ERROR = (
    "<html>\r\n<head><title>{status} Internal Server Error</title></head>\r\n<body>\r\n"
    "<center><h1>{status} Internal Server Error</h1></center>\r\n<hr><center>nginx</center>\r\n"
    "</body>\r\n</html>\r\n"
)


def _error_xml(code: int, message: str) -> str:
    return f'<oml:error {NS}>{_el("code", code)}{_el("message", message)}</oml:error>'


def _list_filters(parts: list[str]) -> tuple[str, dict[str, str]]:
    """Split ``kind/list/k1/v1/k2/v2`` into ``kind`` and its filters."""
    kind = parts[0]
    rest = parts[2:]
    if len(rest) % 2:
        raise ApiError(100, f"filters must come in name/value pairs: {'/'.join(rest)}")
    return kind, {rest[i]: rest[i + 1] for i in range(0, len(rest), 2)}


def _ids(value: str | None) -> set[int] | None:
    if value is None:
        return None
    try:
        return {int(v) for v in value.split(",") if v}
    except ValueError as e:
        raise ApiError(100, f"not a list of ids: {value}") from e


def _page(items: list[Any], filters: Mapping[str, str], kind: str) -> list[Any]:
    offset = int(filters.get("offset", 0))
    limit = filters.get("limit")
    page = items[offset: offset + int(limit)] if limit is not None else items[offset:]
    if not page:
        raise ApiError(NO_RESULT_CODES[kind], "No results")
    return page


class _Renderer:
    """Turns the server's state into OpenML XML responses."""

    def __init__(self, server: FakeOpenMLServer) -> None:
        self.s = server

    # -- lookups
    def dataset(self, did: int, code: int = 111) -> FakeDataset:
        if did not in self.s.datasets:
            raise ApiError(code, "Unknown dataset")
        return self.s.datasets[did]

    def _get(self, table: dict[int, Any], key: int, code: int, what: str) -> Any:
        if key not in table:
            raise ApiError(code, f"Unknown {what}")
        return table[key]

    def task_target(self, task: FakeTask) -> str:
        return task.target or self.dataset(task.did).target or ""

    # -- datasets
    def data_description(self, did: int) -> str:
        d = self.dataset(did)
        url = f"{self.s.base_url}/data/download/{d.file_id}/{d.name}.arff"
        return (
            f"<oml:data_set_description {NS}>{_el('id', d.did)}{_el('name', d.name)}"
            f"{_el('version', d.version)}{_el('description', f'Test dataset {d.name}.')}"
            f"{_el('format', 'ARFF')}{_el('upload_date', '2024-01-01T00:00:00')}"
            f"{_el('licence', 'Public')}{_el('url', url)}{_el('file_id', d.file_id)}"
            + (_el("default_target_attribute", d.target) if d.target else "")
            + f"{_el('version_label', d.version)}{_el('tag', 'test')}"
            f"{_el('visibility', 'public')}{_el('status', 'active')}"
            f"{_el('md5_checksum', d.md5)}</oml:data_set_description>"
        )

    def data_features(self, did: int) -> str:
        d = self.dataset(did, code=271)
        parts = []
        for i, f in enumerate(d.features()):
            nominal = "".join(_el("nominal_value", v) for v in (f["nominal"] or []))
            parts.append(
                f"<oml:feature>{_el('index', i)}{_el('name', f['name'])}"
                f"{_el('data_type', f['data_type'])}{nominal}"
                f"{_el('is_target', str(f['name'] == d.target).lower())}"
                f"{_el('is_ignore', 'false')}{_el('is_row_identifier', 'false')}"
                f"{_el('number_of_missing_values', f['missing'])}</oml:feature>"
            )
        return f"<oml:data_features {NS}>{''.join(parts)}</oml:data_features>"

    def data_qualities(self, did: int) -> str:
        d = self.dataset(did, code=361)
        if d.qualities is None:
            raise ApiError(362, "No qualities found")
        body = "".join(
            f"<oml:quality>{_el('name', k)}{_el('value', _fmt(v))}</oml:quality>"
            for k, v in d.qualities.items()
        )
        return f"<oml:data_qualities {NS}>{body}</oml:data_qualities>"

    def data_list(self, filters: Mapping[str, str]) -> str:
        ids = _ids(filters.get("data_id"))
        items = [d for k, d in sorted(self.s.datasets.items()) if ids is None or k in ids]
        parts = []
        for d in _page(items, filters, "data"):
            quals = "".join(
                f'<oml:quality name={quoteattr(k)}>{_fmt(v)}</oml:quality>'
                for k, v in (d.qualities or {}).items() if _fmt(v) is not None
            )
            parts.append(
                f"<oml:dataset>{_el('did', d.did)}{_el('name', d.name)}{_el('version', d.version)}"
                f"{_el('status', 'active')}{_el('format', 'ARFF')}{_el('file_id', d.file_id)}"
                f"{quals}</oml:dataset>"
            )
        return f"<oml:data {NS}>{''.join(parts)}</oml:data>"

    # -- tasks
    def task(self, tid: int) -> str:
        t: FakeTask = self._get(self.s.tasks, tid, 151, "task")
        splits = f"{self.s.base_url}/api_splits/get/{t.tid}/Task_{t.tid}_splits.arff"
        return (
            f"<oml:task {NS}>{_el('task_id', t.tid)}{_el('task_type_id', t.task_type_id)}"
            f"{_el('task_type', TASK_TYPES.get(t.task_type_id, 'Unknown'))}"
            f'<oml:input name="source_data"><oml:data_set>{_el("data_set_id", t.did)}'
            f"{_el('target_feature', self.task_target(t))}</oml:data_set></oml:input>"
            f'<oml:input name="estimation_procedure"><oml:estimation_procedure>{_el("id", 1)}'
            f"{_el('type', 'crossvalidation')}{_el('data_splits_url', splits)}"
            f'<oml:parameter name="number_repeats">{t.repeats}</oml:parameter>'
            f'<oml:parameter name="number_folds">{t.folds}</oml:parameter>'
            '<oml:parameter name="percentage"></oml:parameter>'
            '<oml:parameter name="stratified_sampling">true</oml:parameter>'
            "</oml:estimation_procedure></oml:input>"
            '<oml:input name="cost_matrix"><oml:cost_matrix></oml:cost_matrix></oml:input>'
            '<oml:input name="evaluation_measures"><oml:evaluation_measures>'
            f"{_el('evaluation_measure', t.measure)}</oml:evaluation_measures></oml:input>"
            f"{_el('tag', 'test')}</oml:task>"
        )

    def task_list(self, filters: Mapping[str, str]) -> str:
        ttype = filters.get("type")
        items = [t for _, t in sorted(self.s.tasks.items())
                 if ttype is None or t.task_type_id == int(ttype)]
        parts = []
        for t in _page(items, filters, "task"):
            d = self.dataset(t.did)
            parts.append(
                f"<oml:task>{_el('task_id', t.tid)}{_el('task_type_id', t.task_type_id)}"
                f"{_el('did', t.did)}{_el('name', d.name)}"
                f"{_el('task_type', TASK_TYPES.get(t.task_type_id, 'Unknown'))}{_el('status', 'active')}"
                '<oml:input name="estimation_procedure">1</oml:input>'
                f'<oml:input name="target_feature">{escape(self.task_target(t))}</oml:input>'
                "</oml:task>"
            )
        return f"<oml:tasks {NS}>{''.join(parts)}</oml:tasks>"

    @staticmethod
    def estimation_procedures() -> str:
        procs = "".join(
            f"<oml:estimationprocedure>{_el('id', 1)}{_el('ttid', ttid)}"
            f"{_el('name', '10-fold Crossvalidation')}{_el('type', 'crossvalidation')}"
            f"{_el('repeats', 1)}{_el('folds', 10)}{_el('stratified_sampling', 'true')}"
            "</oml:estimationprocedure>"
            for ttid in TASK_TYPES
        )
        return f"<oml:estimationprocedures {NS}>{procs}</oml:estimationprocedures>"

    # -- flows, setups
    def _flow_body(self, f: FakeFlow) -> str:
        params = "".join(
            f"<oml:parameter>{_el('name', k)}{_el('data_type', 'option')}"
            f"{_el('default_value', v)}{_el('description', '')}</oml:parameter>"
            for k, v in f.parameters.items()
        )
        comps = "".join(
            f"<oml:component>{_el('identifier', ident)}<oml:flow {NS}>{self._flow_body(c)}"
            "</oml:flow></oml:component>"
            for ident, c in f.components.items()
        )
        return (
            f"{_el('id', f.fid)}{_el('uploader', 1)}{_el('name', f.name)}"
            f"{_el('version', f.version)}{_el('external_version', f.external_version)}"
            f"{_el('description', f'Test flow {f.name}.')}"
            f"{_el('upload_date', '2024-01-01T00:00:00')}{_el('language', 'English')}"
            f"{_el('dependencies', f.dependencies)}{params}{comps}{_el('tag', 'test')}"
        )

    def flow(self, fid: int) -> str:
        f: FakeFlow = self._get(self.s.flows, fid, 181, "flow")
        return f"<oml:flow {NS}>{self._flow_body(f)}</oml:flow>"

    def flow_list(self, filters: Mapping[str, str]) -> str:
        items = [f for _, f in sorted(self.s.flows.items())]
        parts = "".join(
            f"<oml:flow>{_el('id', f.fid)}{_el('full_name', f'{f.name}({f.version})')}"
            f"{_el('name', f.name)}{_el('version', f.version)}"
            f"{_el('external_version', f.external_version)}{_el('uploader', 1)}</oml:flow>"
            for f in _page(items, filters, "flow")
        )
        return f"<oml:flows {NS}>{parts}</oml:flows>"

    def setup_parameters(self, s: FakeSetup) -> str:
        top: FakeFlow = self._get(self.s.flows, s.flow_id, 281, "flow of setup")
        out = []
        for prefix, f in top.walk():
            for i, (name, default) in enumerate(f.parameters.items()):
                key = prefix + name
                value = f.encode(s.values[key]) if key in s.values else default
                out.append(
                    f"<oml:parameter>{_el('id', f.fid * 1000 + i)}{_el('flow_id', f.fid)}"
                    f"{_el('flow_name', f.name)}{_el('full_name', f'{f.name}({f.version})_{name}')}"
                    f"{_el('parameter_name', name)}{_el('data_type', 'option')}"
                    f"{_el('default_value', default)}{_el('value', value)}</oml:parameter>"
                )
        return f"{_el('setup_id', s.sid)}{_el('flow_id', s.flow_id)}{''.join(out)}"

    def setup(self, sid: int) -> str:
        s: FakeSetup = self._get(self.s.setups, sid, 281, "setup")
        return f"<oml:setup_parameters {NS}>{self.setup_parameters(s)}</oml:setup_parameters>"

    def setup_list(self, filters: Mapping[str, str]) -> str:
        ids, flows = _ids(filters.get("setup")), _ids(filters.get("flow"))
        items = [s for k, s in sorted(self.s.setups.items())
                 if (ids is None or k in ids) and (flows is None or s.flow_id in flows)]
        parts = "".join(
            f"<oml:setup>{self.setup_parameters(s)}</oml:setup>"
            for s in _page(items, filters, "setup")
        )
        return f"<oml:setups {NS}>{parts}</oml:setups>"

    # -- runs, evaluations, users
    def _run_context(self, r: FakeRun) -> tuple[FakeTask, FakeSetup, FakeFlow, FakeDataset]:
        task: FakeTask = self._get(self.s.tasks, r.task_id, 151, "task")
        setup: FakeSetup = self._get(self.s.setups, r.setup_id, 281, "setup")
        flow: FakeFlow = self._get(self.s.flows, setup.flow_id, 181, "flow")
        return task, setup, flow, self.dataset(task.did)

    def run(self, rid: int) -> str:
        r: FakeRun = self._get(self.s.runs, rid, 220, "run")
        task, setup, flow, d = self._run_context(r)
        settings = "".join(
            f"<oml:parameter_setting>{_el('name', k)}{_el('value', flow.encode(v))}"
            "</oml:parameter_setting>"
            for k, v in setup.values.items()
        )
        evals = "".join(
            f"<oml:evaluation>{_el('name', k)}{_el('value', _fmt(v))}</oml:evaluation>"
            for k, v in r.evaluations.items() if _fmt(v) is not None
        )
        base = f"{self.s.base_url}/data/download"
        return (
            f"<oml:run {NS}>{_el('run_id', r.rid)}{_el('uploader', r.uploader)}"
            f"{_el('uploader_name', self.s.users.get(r.uploader, f'user{r.uploader}'))}"
            f"{_el('task_id', task.tid)}{_el('task_type', TASK_TYPES.get(task.task_type_id))}"
            f"{_el('flow_id', flow.fid)}{_el('flow_name', f'{flow.name}({flow.version})')}"
            f"{_el('setup_id', setup.sid)}{_el('error', '')}{_el('setup_string', flow.name)}"
            f"{settings}<oml:input_data><oml:dataset>{_el('did', d.did)}{_el('name', d.name)}"
            f"{_el('url', f'{base}/{d.file_id}/{d.name}.arff')}</oml:dataset></oml:input_data>"
            "<oml:output_data>"
            f"<oml:file>{_el('did', -1)}{_el('file_id', 2 * r.rid)}{_el('name', 'description')}"
            f"{_el('url', f'{base}/{2 * r.rid}/description.xml')}</oml:file>"
            f"<oml:file>{_el('did', -1)}{_el('file_id', 2 * r.rid + 1)}{_el('name', 'predictions')}"
            f"{_el('url', f'{base}/{2 * r.rid + 1}/predictions.arff')}</oml:file>"
            f"{evals}</oml:output_data></oml:run>"
        )

    def _runs(self, filters: Mapping[str, str]) -> list[tuple[FakeRun, FakeTask, FakeSetup, FakeFlow, FakeDataset]]:
        want = {k: _ids(filters.get(k)) for k in ("run", "task", "setup", "flow", "uploader")}
        out = []
        for _, r in sorted(self.s.runs.items()):
            task, setup, flow, d = self._run_context(r)
            have = {"run": r.rid, "task": task.tid, "setup": setup.sid, "flow": flow.fid,
                    "uploader": r.uploader}
            if all(ids is None or have[k] in ids for k, ids in want.items()):
                out.append((r, task, setup, flow, d))
        return out

    def run_list(self, filters: Mapping[str, str]) -> str:
        parts = "".join(
            f"<oml:run>{_el('run_id', r.rid)}{_el('task_id', t.tid)}{_el('setup_id', s.sid)}"
            f"{_el('flow_id', f.fid)}{_el('uploader', r.uploader)}"
            f"{_el('task_type_id', t.task_type_id)}{_el('upload_time', r.upload_time)}"
            f"{_el('error_message', '')}</oml:run>"
            for r, t, s, f, _ in _page(self._runs(filters), filters, "run")
        )
        return f"<oml:runs {NS}>{parts}</oml:runs>"

    def evaluation_list(self, filters: Mapping[str, str]) -> str:
        function = filters.get("function")
        if function is None:
            raise ApiError(541, "Function not set")
        rows = [(r, t, s, f, d) for r, t, s, f, d in self._runs(filters) if function in r.evaluations]
        order = filters.get("sort_order")
        if order in ("asc", "desc"):
            rows.sort(key=lambda x: (x[0].evaluations[function] is None, x[0].evaluations[function] or 0.0),
                      reverse=order == "desc")
        parts = []
        for r, t, s, f, d in _page(rows, filters, "evaluation"):
            value = _fmt(r.evaluations[function])
            parts.append(
                f"<oml:evaluation>{_el('run_id', r.rid)}{_el('task_id', t.tid)}"
                f"{_el('setup_id', s.sid)}{_el('flow_id', f.fid)}"
                f"{_el('flow_name', f'{f.name}({f.version})')}{_el('data_id', d.did)}"
                f"{_el('data_name', d.name)}{_el('function', function)}"
                f"{_el('upload_time', r.upload_time)}{_el('uploader', r.uploader)}"
                + (_el("value", value) if value is not None else "")
                + "</oml:evaluation>"
            )
        return f"<oml:evaluations {NS}>{''.join(parts)}</oml:evaluations>"

    def user_list(self, filters: Mapping[str, str]) -> str:
        ids = sorted(_ids(filters.get("user_id")) or self.s.users)
        parts = "".join(
            f"<oml:user>{_el('id', u)}{_el('username', self.s.users.get(u, f'user{u}'))}</oml:user>"
            for u in ids
        )
        return f"<oml:users {NS}>{parts}</oml:users>"

    # -- dispatch
    def api(self, endpoint: str) -> str:
        parts = [p for p in endpoint.split("/") if p]
        if not parts:
            raise ApiError(100, "Function not valid", status=404)
        if len(parts) >= 2 and parts[1] == "list":
            kind, filters = _list_filters(parts)
            listing = {
                "data": self.data_list, "task": self.task_list, "flow": self.flow_list,
                "setup": self.setup_list, "run": self.run_list, "evaluation": self.evaluation_list,
                "user": self.user_list,
            }.get(kind)
            if listing is not None:
                return listing(filters)
            if kind == "estimationprocedure":
                return self.estimation_procedures()
        try:
            if parts[0] == "data" and len(parts) == 2:
                return self.data_description(int(parts[1]))
            if parts[0] == "data" and len(parts) == 3 and parts[1] == "features":
                return self.data_features(int(parts[2]))
            if parts[0] == "data" and len(parts) == 3 and parts[1] == "qualities":
                return self.data_qualities(int(parts[2]))
            single = {"task": self.task, "flow": self.flow, "setup": self.setup, "run": self.run}
            if len(parts) == 2 and parts[0] in single:
                return single[parts[0]](int(parts[1]))
        except ValueError as e:
            raise ApiError(100, f"invalid id in {endpoint}") from e
        raise ApiError(100, f"Function not valid: {endpoint}", status=404)


# ---------------------------------------------------------------------- HTTP plumbing
class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        self.server.fake.handle(self, "GET")

    def do_POST(self) -> None:  # noqa: N802
        self.server.fake.handle(self, "POST")

    def do_DELETE(self) -> None:  # noqa: N802
        self.server.fake.handle(self, "DELETE")

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        logger.debug("fake openml: " + format, *args)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeOpenMLServer


class FakeOpenMLServer:
    """An OpenML XML API v1 on 127.0.0.1 (random port) served from a background thread.

    Build its content with the ``add_*`` methods (or edit :attr:`datasets`,
    :attr:`tasks`, :attr:`flows`, :attr:`setups`, :attr:`runs`, :attr:`users`), point
    ``openml.config.server`` at :attr:`url`, and use :meth:`fail_next`,
    :meth:`malform` and :attr:`requests` to inject faults and inspect traffic.
    """

    def __init__(self) -> None:
        self.datasets: dict[int, FakeDataset] = {}
        self.tasks: dict[int, FakeTask] = {}
        self.flows: dict[int, FakeFlow] = {}
        self.setups: dict[int, FakeSetup] = {}
        self.runs: dict[int, FakeRun] = {}
        self.users: dict[int, str] = {1: "Jan van Rijn"}
        self.requests: list[LoggedRequest] = []
        self._faults: list[_Fault] = []
        self._lock = threading.RLock()
        self._httpd: _HTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._render = _Renderer(self)

    # -- lifecycle
    def start(self) -> FakeOpenMLServer:
        """Bind a free port on 127.0.0.1 and serve in a daemon thread."""
        if self._httpd is None:
            self._httpd = _HTTPServer(("127.0.0.1", 0), _Handler)
            self._httpd.fake = self
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01},
                name="fake-openml", daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and release the port (idempotent)."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            if self._thread is not None:
                self._thread.join(timeout=5)
            self._httpd, self._thread = None, None

    def __enter__(self) -> FakeOpenMLServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` (the server must be started)."""
        if self._httpd is None:
            raise RuntimeError("the fake OpenML server is not started; call start() first")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}"

    @property
    def url(self) -> str:
        """The API root to put in ``openml.config.server``."""
        return f"{self.base_url}/api/v1/xml"

    # -- content
    def add_dataset(self, dataset: FakeDataset) -> FakeDataset:
        with self._lock:
            self.datasets[dataset.did] = dataset
        return dataset

    def add_task(self, task: FakeTask) -> FakeTask:
        with self._lock:
            self.tasks[task.tid] = task
        return task

    def add_flow(self, flow: FakeFlow) -> FakeFlow:
        """Register a flow and, recursively, its components."""
        with self._lock:
            for _, f in flow.walk():
                self.flows[f.fid] = f
        return flow

    def add_setup(self, setup: FakeSetup) -> FakeSetup:
        with self._lock:
            self.setups[setup.sid] = setup
        return setup

    def add_run(self, run: FakeRun) -> FakeRun:
        with self._lock:
            self.runs[run.rid] = run
        return run

    # -- faults and log
    def fail_next(self, count: int = 1, *, status: int = 500, code: int = 107,
                  endpoint: str | None = None) -> None:
        """Answer the next ``count`` matching requests with HTTP ``status``.

        500 sends a non-XML body (a crashed backend); other statuses send an OpenML
        ``<oml:error>`` with ``code`` (107, "database connection error", is what the
        real server sends under load). ``endpoint`` restricts the fault to API calls
        starting with it (or, if it starts with ``/``, to URL paths starting with it).
        """
        with self._lock:
            self._faults.append(_Fault(count, status, code, endpoint))

    def malform(self, endpoint: str, count: int | None = None) -> None:
        """Send truncated XML (HTTP 200) for matching requests; ``None``: until cleared."""
        with self._lock:
            self._faults.append(_Fault(count, 200, 0, endpoint, malformed=True))

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def clear_log(self) -> None:
        with self._lock:
            self.requests.clear()

    def requested(self, prefix: str = "") -> list[LoggedRequest]:
        """Logged API requests whose endpoint starts with ``prefix``."""
        with self._lock:
            return [r for r in self.requests if r.endpoint and r.endpoint.startswith(prefix)]

    # -- request handling
    def _take_fault(self, endpoint: str, path: str) -> _Fault | None:
        for fault in self._faults:
            if fault.matches(endpoint, path):
                if fault.remaining is not None:
                    fault.remaining -= 1
                    if fault.remaining <= 0:
                        self._faults.remove(fault)
                return fault
        return None

    def _respond(self, method: str, path: str, endpoint: str) -> tuple[int, str, str]:
        with self._lock:
            fault = self._take_fault(endpoint, path)
            if fault is not None and not fault.malformed:
                if fault.status >= 500:
                    return fault.status, "text/html", _HTML_ERROR.format(status=fault.status)
                return fault.status, "text/xml", _error_xml(fault.code, "Injected error")
            status = 200
            try:
                if method != "GET":
                    raise ApiError(102, "This fake server is read-only", status=412)
                if path.startswith("/data/download/"):
                    body, ctype = self._download(path), "text/plain"
                elif endpoint:
                    body, ctype = self._render.api(endpoint), "text/xml"
                else:
                    raise ApiError(100, f"Unknown path {path}", status=404)
            except ApiError as e:
                status, ctype, body = e.status, "text/xml", _error_xml(e.code, e.message)
            if fault is not None:  # malformed: cut the document in half
                body = body[: max(len(body) // 2, 1)]
            return status, ctype, body

    def _download(self, path: str) -> str:
        file_id = int(path.split("/")[3])
        for d in self.datasets.values():
            if d.file_id == file_id:
                return d.arff_text
        raise ApiError(110, "File not found", status=404)

    def handle(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        """Answer one request and log it (called from the handler thread)."""
        path = unquote(urlsplit(handler.path).path)
        endpoint = path[len(API_PREFIX):].strip("/") if path.startswith(API_PREFIX) else ""
        try:
            status, ctype, body = self._respond(method, path, endpoint)
        except Exception as e:  # a bug in the fake server: report it, do not hang the client
            logger.exception("fake openml server failed on %s", path)
            status, ctype, body = 500, "text/plain", f"fake server error: {e}"
        with self._lock:
            self.requests.append(LoggedRequest(method, path, endpoint, status))
        data = body.encode("utf-8")
        gz = "gzip" in handler.headers.get("Accept-Encoding", "")
        if gz:
            data = gzip.compress(data, compresslevel=1)
        handler.send_response(status)
        handler.send_header("Content-Type", f"{ctype}; charset=utf-8")
        if gz:
            handler.send_header("Content-Encoding", "gzip")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)


# ---------------------------------------------------------------------- example content
RF_CLASS = "sklearn.ensemble._forest.RandomForestClassifier"
SVC_CLASS = "sklearn.svm._classes.SVC"


def example_frames(seed: int = 0) -> dict[str, pd.DataFrame]:
    """Two small tables: ``toy`` (numeric + nominal, some missing) and ``blobs`` (numeric)."""
    rng = np.random.default_rng(seed)
    n = 40
    toy = pd.DataFrame({
        "width": rng.normal(size=n).round(3),
        "colour": pd.Categorical(rng.choice(["red", "green"], n), categories=["red", "green", "blue"]),
        "count": rng.integers(0, 9, n),
        "shape": pd.Categorical(rng.choice(["round", "square", "flat"], n)),
        "class": pd.Categorical(rng.choice(["yes", "no"], n), categories=["no", "yes"]),
    })
    toy.loc[[2, 5], "width"] = np.nan
    toy.loc[7, "colour"] = np.nan
    blobs = pd.DataFrame(rng.normal(size=(30, 3)).round(3), columns=["x1", "x2", "x3"])
    blobs["target"] = pd.Categorical(rng.choice(["a", "b", "c"], 30))
    return {"toy": toy, "blobs": blobs}


def add_example_content(server: FakeOpenMLServer, *, runs_per_setup: int = 1) -> dict[str, Any]:
    """Fill ``server`` with two datasets, two tasks, five flows, five setups and runs.

    Datasets 61 (``toy``) and 62 (``blobs``); tasks 1 and 2 on them; flows: 10 random
    forest, 20 ``weka.J48``, 30 Pipeline(imputer, SVC), 40 Pipeline(imputer, an unknown
    estimator), 50 SVC; setups 100 (RF n_estimators=500, max_features="sqrt"), 101 (J48
    C=0.1), 102 (pipeline SVC C=10 poly), 103 (unknown final step), 104 (SVC C=2 rbf).
    Each setup runs ``runs_per_setup`` times on each task, run ids from 1000 up, with
    ``predictive_accuracy`` and ``area_under_roc_curve``. Returns the ids used.
    """
    frames = example_frames()
    server.add_dataset(FakeDataset.from_frame(61, "toy", frames["toy"], target="class",
                                              qualities={"ClassEntropy": 0.99, "Dimensionality": 0.1}))
    server.add_dataset(FakeDataset.from_frame(62, "blobs", frames["blobs"], target="target"))
    server.add_task(FakeTask(1, 61))
    server.add_task(FakeTask(2, 62))
    imputer = "sklearn.impute._base.SimpleImputer"
    server.add_flow(sklearn_flow(10, RF_CLASS, {
        "n_estimators": 100, "max_features": "sqrt", "min_samples_leaf": 1, "max_depth": None,
        "n_jobs": None,
    }))
    server.add_flow(weka_flow(20, "weka.J48", {"C": "0.25", "M": "2"}))
    server.add_flow(pipeline_flow(30, {
        "imputer": sklearn_flow(31, imputer, {"strategy": "mean"}),
        "svc": sklearn_flow(32, SVC_CLASS, {"C": 1.0, "gamma": "scale", "kernel": "rbf"}),
    }))
    server.add_flow(pipeline_flow(40, {
        "imputer": sklearn_flow(41, imputer, {"strategy": "median"}),
        "model": sklearn_flow(42, "mylib.models.FancyClassifier", {"alpha": 0.5}),
    }))
    server.add_flow(sklearn_flow(50, SVC_CLASS, {"C": 1.0, "gamma": "scale", "kernel": "rbf"}))
    server.add_setup(FakeSetup(100, 10, {"n_estimators": 500}))
    server.add_setup(FakeSetup(101, 20, {"C": "0.1"}))
    server.add_setup(FakeSetup(102, 30, {"svc__C": 10.0, "svc__kernel": "poly"}))
    server.add_setup(FakeSetup(103, 40, {"model__alpha": 0.25}))
    server.add_setup(FakeSetup(104, 50, {"C": 2.0}))
    rid = 1000
    for _ in range(runs_per_setup):
        for tid in (1, 2):
            for sid in (100, 101, 102, 103, 104):
                acc = round(0.5 + ((rid * 37) % 47) / 100, 4)
                server.add_run(FakeRun(rid, tid, sid, {"predictive_accuracy": acc,
                                                       "area_under_roc_curve": min(acc + 0.05, 1.0)}))
                rid += 1
    return {"datasets": [61, 62], "tasks": [1, 2], "flows": [10, 20, 30, 40, 50],
            "setups": [100, 101, 102, 103, 104], "runs": list(range(1000, rid))}
