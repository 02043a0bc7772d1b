"""XML of the dataset and task endpoints: ``data/...``, ``task/...``, estimation procedures."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape, quoteattr

from metabo.testing.openml_server.api import ApiError, lookup, page, parse_ids
from metabo.testing.openml_server.dataset import NO_QUALITIES, FakeDataset
from metabo.testing.openml_server.model import FakeTask
from metabo.testing.openml_server.xml import NS, TASK_TYPES, el, fmt

if TYPE_CHECKING:
    from metabo.testing.openml_server.server import FakeOpenMLServer


def _dataset(s: FakeOpenMLServer, did: int, code: int = 111) -> FakeDataset:
    dataset: FakeDataset = lookup(s.datasets, did, code, "dataset")
    if dataset.deleted:
        raise ApiError(code, "Unknown dataset")
    return dataset


def _task_target(s: FakeOpenMLServer, task: FakeTask) -> str:
    return task.target or _dataset(s, task.did).target or ""


def data_description(s: FakeOpenMLServer, did: int) -> str:
    d = _dataset(s, did)
    url = f"{s.base_url}/data/download/{d.file_id}/{d.name}.arff"
    return (
        f"<oml:data_set_description {NS}>{el('id', d.did)}{el('name', d.name)}"
        f"{el('version', d.version)}{el('description', f'Test dataset {d.name}.')}"
        f"{el('format', 'ARFF')}{el('upload_date', '2024-01-01T00:00:00')}"
        f"{el('licence', 'Public')}{el('url', url)}{el('file_id', d.file_id)}"
        + (el("default_target_attribute", d.target) if d.target else "")
        + f"{el('version_label', d.version)}{el('tag', 'test')}"
        f"{el('visibility', 'public')}{el('status', 'active')}"
        f"{el('md5_checksum', d.md5)}</oml:data_set_description>"
    )


def data_features(s: FakeOpenMLServer, did: int) -> str:
    d = _dataset(s, did, code=271)
    parts = []
    for i, f in enumerate(d.features()):
        nominal = "".join(el("nominal_value", v) for v in (f["nominal"] or []))
        parts.append(
            f"<oml:feature>{el('index', i)}{el('name', f['name'])}"
            f"{el('data_type', f['data_type'])}{nominal}"
            f"{el('is_target', str(f['name'] == d.target).lower())}"
            f"{el('is_ignore', 'false')}{el('is_row_identifier', 'false')}"
            f"{el('number_of_missing_values', f['missing'])}</oml:feature>"
        )
    return f"<oml:data_features {NS}>{''.join(parts)}</oml:data_features>"


def data_qualities(s: FakeOpenMLServer, did: int) -> str:
    d = _dataset(s, did, code=361)
    if d.qualities is None:
        code = d.qualities_code
        raise ApiError(code, NO_QUALITIES[code], additional=d.processing_error if code == 364 else None)
    body = "".join(
        f"<oml:quality>{el('name', k)}{el('value', fmt(v))}</oml:quality>"
        for k, v in d.qualities.items()
    )
    return f"<oml:data_qualities {NS}>{body}</oml:data_qualities>"


def data_list(s: FakeOpenMLServer, filters: Mapping[str, str]) -> str:
    ids = parse_ids(filters.get("data_id"))
    items = [d for k, d in sorted(s.datasets.items()) if (ids is None or k in ids) and not d.deleted]
    parts = []
    for d in page(items, filters, "data"):
        quals = "".join(
            f'<oml:quality name={quoteattr(k)}>{fmt(v)}</oml:quality>'
            for k, v in (d.qualities or {}).items() if fmt(v) is not None
        )
        parts.append(
            f"<oml:dataset>{el('did', d.did)}{el('name', d.name)}{el('version', d.version)}"
            f"{el('status', 'active')}{el('format', 'ARFF')}{el('file_id', d.file_id)}"
            f"{quals}</oml:dataset>"
        )
    return f"<oml:data {NS}>{''.join(parts)}</oml:data>"


def task(s: FakeOpenMLServer, tid: int) -> str:
    t: FakeTask = lookup(s.tasks, tid, 151, "task")
    splits = f"{s.base_url}/api_splits/get/{t.tid}/Task_{t.tid}_splits.arff"
    return (
        f"<oml:task {NS}>{el('task_id', t.tid)}{el('task_type_id', t.task_type_id)}"
        f"{el('task_type', TASK_TYPES.get(t.task_type_id, 'Unknown'))}"
        f'<oml:input name="source_data"><oml:data_set>{el("data_set_id", t.did)}'
        f"{el('target_feature', _task_target(s, t))}</oml:data_set></oml:input>"
        f'<oml:input name="estimation_procedure"><oml:estimation_procedure>{el("id", 1)}'
        f"{el('type', 'crossvalidation')}{el('data_splits_url', splits)}"
        f'<oml:parameter name="number_repeats">{t.repeats}</oml:parameter>'
        f'<oml:parameter name="number_folds">{t.folds}</oml:parameter>'
        '<oml:parameter name="percentage"></oml:parameter>'
        '<oml:parameter name="stratified_sampling">true</oml:parameter>'
        "</oml:estimation_procedure></oml:input>"
        '<oml:input name="cost_matrix"><oml:cost_matrix></oml:cost_matrix></oml:input>'
        '<oml:input name="evaluation_measures"><oml:evaluation_measures>'
        f"{el('evaluation_measure', t.measure)}</oml:evaluation_measures></oml:input>"
        f"{el('tag', 'test')}</oml:task>"
    )


def task_list(s: FakeOpenMLServer, filters: Mapping[str, str]) -> str:
    ttype = filters.get("type")
    items = [t for _, t in sorted(s.tasks.items())
             if ttype is None or t.task_type_id == int(ttype)]
    parts = []
    for t in page(items, filters, "task"):
        d = _dataset(s, t.did)
        parts.append(
            f"<oml:task>{el('task_id', t.tid)}{el('task_type_id', t.task_type_id)}"
            f"{el('did', t.did)}{el('name', d.name)}"
            f"{el('task_type', TASK_TYPES.get(t.task_type_id, 'Unknown'))}{el('status', 'active')}"
            '<oml:input name="estimation_procedure">1</oml:input>'
            f'<oml:input name="target_feature">{escape(_task_target(s, t))}</oml:input>'
            "</oml:task>"
        )
    return f"<oml:tasks {NS}>{''.join(parts)}</oml:tasks>"


def estimation_procedures() -> str:
    procs = "".join(
        f"<oml:estimationprocedure>{el('id', 1)}{el('ttid', ttid)}"
        f"{el('name', '10-fold Crossvalidation')}{el('type', 'crossvalidation')}"
        f"{el('repeats', 1)}{el('folds', 10)}{el('stratified_sampling', 'true')}"
        "</oml:estimationprocedure>"
        for ttid in TASK_TYPES
    )
    return f"<oml:estimationprocedures {NS}>{procs}</oml:estimationprocedures>"


#: What ``evaluationmeasure/list`` names (a few of OpenML's measures).
EVALUATION_MEASURES: tuple[str, ...] = (
    "area_under_roc_curve", "f_measure", "kappa", "mean_absolute_error", "predictive_accuracy",
    "relative_absolute_error", "root_mean_squared_error", "root_relative_squared_error",
    "usercpu_time_millis",
)


def evaluation_measures() -> str:
    measures = "".join(el("measure", m) for m in EVALUATION_MEASURES)
    return f"<oml:evaluation_measures {NS}><oml:measures>{measures}</oml:measures></oml:evaluation_measures>"
