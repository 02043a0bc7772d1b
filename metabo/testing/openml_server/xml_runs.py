"""XML of the run endpoints: ``run/{id}``, ``run/list``, ``evaluation/list``, ``user/list``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from metabo.testing.openml_server.api import ApiError, lookup, page, parse_ids
from metabo.testing.openml_server.dataset import FakeDataset
from metabo.testing.openml_server.model import FakeFlow, FakeRun, FakeSetup, FakeTask
from metabo.testing.openml_server.xml import NS, TASK_TYPES, el, fmt

if TYPE_CHECKING:
    from metabo.testing.openml_server.server import FakeOpenMLServer

_RunRow = tuple[FakeRun, FakeTask, FakeSetup, FakeFlow, FakeDataset]


def _run_context(s: FakeOpenMLServer, r: FakeRun) -> tuple[FakeTask, FakeSetup, FakeFlow, FakeDataset]:
    task: FakeTask = lookup(s.tasks, r.task_id, 151, "task")
    setup: FakeSetup = lookup(s.setups, r.setup_id, 281, "setup")
    flow: FakeFlow = lookup(s.flows, setup.flow_id, 181, "flow")
    dataset: FakeDataset = lookup(s.datasets, task.did, 111, "dataset")
    return task, setup, flow, dataset


def run(s: FakeOpenMLServer, rid: int) -> str:
    r: FakeRun = lookup(s.runs, rid, 220, "run")
    task, setup, flow, d = _run_context(s, r)
    settings = "".join(
        f"<oml:parameter_setting>{el('name', k)}{el('value', flow.encode(v))}"
        "</oml:parameter_setting>"
        for k, v in setup.values.items()
    )
    evals = "".join(
        f"<oml:evaluation>{el('name', k)}{el('value', fmt(v))}</oml:evaluation>"
        for k, v in r.evaluations.items() if fmt(v) is not None
    )
    base = f"{s.base_url}/data/download"
    return (
        f"<oml:run {NS}>{el('run_id', r.rid)}{el('uploader', r.uploader)}"
        f"{el('uploader_name', s.users.get(r.uploader, f'user{r.uploader}'))}"
        f"{el('task_id', task.tid)}{el('task_type', TASK_TYPES.get(task.task_type_id))}"
        f"{el('flow_id', flow.fid)}{el('flow_name', f'{flow.name}({flow.version})')}"
        f"{el('setup_id', setup.sid)}{el('error', '')}{el('setup_string', flow.name)}"
        f"{settings}<oml:input_data><oml:dataset>{el('did', d.did)}{el('name', d.name)}"
        f"{el('url', f'{base}/{d.file_id}/{d.name}.arff')}</oml:dataset></oml:input_data>"
        "<oml:output_data>"
        f"<oml:file>{el('did', -1)}{el('file_id', 2 * r.rid)}{el('name', 'description')}"
        f"{el('url', f'{base}/{2 * r.rid}/description.xml')}</oml:file>"
        f"<oml:file>{el('did', -1)}{el('file_id', 2 * r.rid + 1)}{el('name', 'predictions')}"
        f"{el('url', f'{base}/{2 * r.rid + 1}/predictions.arff')}</oml:file>"
        f"{evals}</oml:output_data></oml:run>"
    )


def _runs(s: FakeOpenMLServer, filters: Mapping[str, str]) -> list[_RunRow]:
    want = {k: parse_ids(filters.get(k)) for k in ("run", "task", "setup", "flow", "uploader")}
    out = []
    for _, r in sorted(s.runs.items()):
        task, setup, flow, d = _run_context(s, r)
        have = {"run": r.rid, "task": task.tid, "setup": setup.sid, "flow": flow.fid,
                "uploader": r.uploader}
        if all(ids is None or have[k] in ids for k, ids in want.items()):
            out.append((r, task, setup, flow, d))
    return out


def run_list(s: FakeOpenMLServer, filters: Mapping[str, str]) -> str:
    parts = "".join(
        f"<oml:run>{el('run_id', r.rid)}{el('task_id', t.tid)}{el('setup_id', x.sid)}"
        f"{el('flow_id', f.fid)}{el('uploader', r.uploader)}"
        f"{el('task_type_id', t.task_type_id)}{el('upload_time', r.upload_time)}"
        f"{el('error_message', '')}</oml:run>"
        for r, t, x, f, _ in page(_runs(s, filters), filters, "run")
    )
    return f"<oml:runs {NS}>{parts}</oml:runs>"


def evaluation_list(s: FakeOpenMLServer, filters: Mapping[str, str]) -> str:
    function = filters.get("function")
    if function is None:
        raise ApiError(541, "Function not set")
    rows = [row for row in _runs(s, filters) if function in row[0].evaluations]
    order = filters.get("sort_order")
    if order in ("asc", "desc"):
        rows.sort(key=lambda x: (x[0].evaluations[function] is None, x[0].evaluations[function] or 0.0),
                  reverse=order == "desc")
    elif s.listing_orders and s.listing_orders.pop(0) == "desc":
        rows.reverse()  # a listing without order: this request lists by descending run id
    if s.page_limit is not None:
        filters = {**filters, "limit": str(min(int(filters.get("limit", s.page_limit)), s.page_limit))}
    parts = []
    for r, t, x, f, d in page(rows, filters, "evaluation"):
        value = fmt(r.evaluations[function])
        parts.append(
            f"<oml:evaluation>{el('run_id', r.rid)}{el('task_id', t.tid)}"
            f"{el('setup_id', x.sid)}{el('flow_id', f.fid)}"
            f"{el('flow_name', f'{f.name}({f.version})')}{el('data_id', d.did)}"
            f"{el('data_name', d.name)}{el('function', function)}"
            f"{el('upload_time', r.upload_time)}{el('uploader', r.uploader)}"
            + (el("value", value) if value is not None else "")
            + "</oml:evaluation>"
        )
    return f"<oml:evaluations {NS}>{''.join(parts)}</oml:evaluations>"


def user_list(s: FakeOpenMLServer, filters: Mapping[str, str]) -> str:
    """The users among the ids asked for; a deleted account is left out, as OpenML does."""
    ids = sorted(parse_ids(filters.get("user_id")) or s.users)
    parts = "".join(
        f"<oml:user>{el('id', u)}{el('username', s.users[u])}</oml:user>"
        for u in ids if u in s.users
    )
    return f"<oml:users {NS}>{parts}</oml:users>"
