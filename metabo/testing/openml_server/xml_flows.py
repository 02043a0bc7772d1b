"""XML of the flow and setup endpoints: ``flow/{id}``, ``flow/list``, ``setup/{id}``, ``setup/list``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from metabo.testing.openml_server.api import ApiError, lookup, page, parse_ids
from metabo.testing.openml_server.model import FakeFlow, FakeSetup
from metabo.testing.openml_server.xml import NS, el

if TYPE_CHECKING:
    from metabo.testing.openml_server.server import FakeOpenMLServer


def _flow_body(f: FakeFlow) -> str:
    params = "".join(
        f"<oml:parameter>{el('name', k)}{el('data_type', 'option')}"
        f"{el('default_value', v)}{el('description', '')}</oml:parameter>"
        for k, v in f.parameters.items()
    )
    comps = "".join(
        f"<oml:component>{el('identifier', ident)}<oml:flow {NS}>{_flow_body(c)}"
        "</oml:flow></oml:component>"
        for ident, c in f.components.items()
    )
    return (
        f"{el('id', f.fid)}{el('uploader', 1)}{el('name', f.name)}"
        f"{el('version', f.version)}{el('external_version', f.external_version)}"
        f"{el('description', f'Test flow {f.name}.')}"
        f"{el('upload_date', '2024-01-01T00:00:00')}{el('language', 'English')}"
        f"{el('dependencies', f.dependencies)}{params}{comps}{el('tag', 'test')}"
    )


def flow(s: FakeOpenMLServer, fid: int) -> str:
    f: FakeFlow = lookup(s.flows, fid, 181, "flow")
    return f"<oml:flow {NS}>{_flow_body(f)}</oml:flow>"


def flow_list(s: FakeOpenMLServer, filters: Mapping[str, str]) -> str:
    items = [f for _, f in sorted(s.flows.items())]
    parts = "".join(
        f"<oml:flow>{el('id', f.fid)}{el('full_name', f'{f.name}({f.version})')}"
        f"{el('name', f.name)}{el('version', f.version)}"
        f"{el('external_version', f.external_version)}{el('uploader', 1)}</oml:flow>"
        for f in page(items, filters, "flow")
    )
    return f"<oml:flows {NS}>{parts}</oml:flows>"


def _setup_parameters(s: FakeOpenMLServer, setup_: FakeSetup) -> str:
    top: FakeFlow = lookup(s.flows, setup_.parameters_from or setup_.flow_id, 281, "flow of setup")
    out = []
    for prefix, f in top.walk():
        for i, (name, default) in enumerate(f.parameters.items()):
            key = prefix + name
            value = f.encode(setup_.values[key]) if key in setup_.values else default
            out.append(
                f"<oml:parameter>{el('id', f.fid * 1000 + i)}{el('flow_id', f.fid)}"
                f"{el('flow_name', f.name)}{el('full_name', f'{f.name}({f.version})_{name}')}"
                f"{el('parameter_name', name)}{el('data_type', 'option')}"
                f"{el('default_value', default)}{el('value', value)}</oml:parameter>"
            )
    return f"{el('setup_id', setup_.sid)}{el('flow_id', setup_.flow_id)}{''.join(out)}"


def setup(s: FakeOpenMLServer, sid: int) -> str:
    found: FakeSetup = lookup(s.setups, sid, 281, "setup")
    if found.deleted:
        raise ApiError(281, "Unknown setup")
    return f"<oml:setup_parameters {NS}>{_setup_parameters(s, found)}</oml:setup_parameters>"


def setup_list(s: FakeOpenMLServer, filters: Mapping[str, str]) -> str:
    ids, flows = parse_ids(filters.get("setup")), parse_ids(filters.get("flow"))
    items = [x for k, x in sorted(s.setups.items())
             if (ids is None or k in ids) and (flows is None or x.flow_id in flows) and not x.deleted]
    parts = "".join(
        f"<oml:setup>{_setup_parameters(s, x)}</oml:setup>"
        for x in page(items, filters, "setup")
    )
    return f"<oml:setups {NS}>{parts}</oml:setups>"
