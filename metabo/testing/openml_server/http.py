"""The fake server's HTTP side: the request handler, routing of API calls, gzip replies."""

from __future__ import annotations

import gzip
import logging
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any

from metabo.testing.openml_server import xml_data, xml_flows, xml_runs
from metabo.testing.openml_server.api import ApiError, list_filters

if TYPE_CHECKING:
    from metabo.testing.openml_server.server import FakeOpenMLServer

logger = logging.getLogger(__name__)

_LISTINGS = {
    "data": xml_data.data_list, "task": xml_data.task_list, "flow": xml_flows.flow_list,
    "setup": xml_flows.setup_list, "run": xml_runs.run_list, "evaluation": xml_runs.evaluation_list,
    "user": xml_runs.user_list,
}
_SINGLE = {"task": xml_data.task, "flow": xml_flows.flow, "setup": xml_flows.setup, "run": xml_runs.run}


class Handler(BaseHTTPRequestHandler):
    """Passes every request to the :class:`FakeOpenMLServer` it belongs to."""

    server: FakeHTTPServer

    def do_GET(self) -> None:  # noqa: N802 - http.server API
        self.server.fake.handle(self, "GET")

    def do_POST(self) -> None:  # noqa: N802
        self.server.fake.handle(self, "POST")

    def do_DELETE(self) -> None:  # noqa: N802
        self.server.fake.handle(self, "DELETE")

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        logger.debug("fake openml: " + format, *args)


class FakeHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    fake: FakeOpenMLServer


def route(s: FakeOpenMLServer, endpoint: str) -> str:
    """The XML answer to an API call (``endpoint`` is the path after ``/api/v1/xml/``)."""
    parts = [p for p in endpoint.split("/") if p]
    if not parts:
        raise ApiError(100, "Function not valid", status=404)
    if len(parts) >= 2 and parts[1] == "list":
        kind, filters = list_filters(parts)
        listing = _LISTINGS.get(kind)
        if listing is not None:
            return listing(s, filters)
        if kind == "estimationprocedure":
            return xml_data.estimation_procedures()
        if kind == "evaluationmeasure":
            return xml_data.evaluation_measures()
    try:
        if parts[0] == "data" and len(parts) == 2:
            return xml_data.data_description(s, int(parts[1]))
        if parts[0] == "data" and len(parts) == 3 and parts[1] == "features":
            return xml_data.data_features(s, int(parts[2]))
        if parts[0] == "data" and len(parts) == 3 and parts[1] == "qualities":
            return xml_data.data_qualities(s, int(parts[2]))
        if len(parts) == 2 and parts[0] in _SINGLE:
            return _SINGLE[parts[0]](s, int(parts[1]))
    except ValueError as e:
        raise ApiError(100, f"invalid id in {endpoint}") from e
    raise ApiError(100, f"Function not valid: {endpoint}", status=404)


def download(s: FakeOpenMLServer, path: str) -> str:
    """The ARFF text behind ``/data/download/{file_id}/...``."""
    file_id = int(path.split("/")[3])
    for d in s.datasets.values():
        if d.file_id == file_id:
            return d.arff_text
    raise ApiError(110, "File not found", status=404)


def send(handler: BaseHTTPRequestHandler, status: int, ctype: str, body: str) -> None:
    """Write a reply, gzip-compressed if the client accepts it (as OpenML's are)."""
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
