"""The fake OpenML server: its content, lifecycle, fault injection and request log."""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler
from urllib.parse import unquote, urlsplit

from metabo.testing.openml_server.api import API_PREFIX, ApiError
from metabo.testing.openml_server.dataset import FakeDataset
from metabo.testing.openml_server.faults import Fault, LoggedRequest, take_fault
from metabo.testing.openml_server.http import FakeHTTPServer, Handler, download, route, send
from metabo.testing.openml_server.model import FakeFlow, FakeRun, FakeSetup, FakeTask
from metabo.testing.openml_server.xml import HTML_ERROR, HTML_NOT_FOUND, error_xml

logger = logging.getLogger(__name__)


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
        #: The body of the HTTP 404 for a path outside the API (and the ARFF downloads).
        self.not_found_page: str = HTML_NOT_FOUND
        self.requests: list[LoggedRequest] = []
        #: The most rows a listing answers per request (``None``: all the ``limit`` asks
        #: for); a smaller number makes short pages in the middle of a listing.
        self.page_limit: int | None = None
        #: The order of successive ``evaluation/list`` answers: ``"asc"`` or ``"desc"`` by
        #: run id, one entry per request, then ``"asc"`` (a listing that has no order).
        self.listing_orders: list[str] = []
        self._faults: list[Fault] = []
        self._lock = threading.RLock()
        self._released = threading.Event()
        self._httpd: FakeHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle
    def start(self) -> FakeOpenMLServer:
        """Bind a free port on 127.0.0.1 and serve in a daemon thread."""
        if self._httpd is None:
            self._released.clear()
            self._httpd = FakeHTTPServer(("127.0.0.1", 0), Handler)
            self._httpd.fake = self
            self._thread = threading.Thread(
                target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01},
                name="fake-openml", daemon=True,
            )
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, let hanging requests go and release the port (idempotent)."""
        self._released.set()
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
            self._faults.append(Fault(count, status, code, endpoint))

    def malform(self, endpoint: str, count: int | None = None) -> None:
        """Send truncated XML (HTTP 200) for matching requests; ``None``: until cleared."""
        with self._lock:
            self._faults.append(Fault(count, 200, 0, endpoint, malformed=True))

    def hang(self, endpoint: str | None = None, count: int | None = None) -> None:
        """Accept matching requests and never answer them (``None``: until :meth:`release`).

        The request is read and logged with status 0; its connection stays open without
        a byte of answer until :meth:`release` or :meth:`stop`, then closes unanswered.
        """
        with self._lock:
            self._released.clear()
            self._faults.append(Fault(count, 0, 0, endpoint, hang=True))

    def release(self) -> None:
        """Drop the :meth:`hang` faults and close the connections they hold."""
        with self._lock:
            self._faults = [f for f in self._faults if not f.hang]
        self._released.set()

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
    def _respond(self, method: str, path: str, endpoint: str) -> tuple[int, str, str]:
        with self._lock:
            fault = take_fault(self._faults, endpoint, path)
            if fault is not None and fault.hang:
                return 0, "", ""
            if fault is not None and not fault.malformed:
                if fault.status >= 500:
                    return fault.status, "text/html", HTML_ERROR.format(status=fault.status)
                return fault.status, "text/xml", error_xml(fault.code, "Injected error")
            status = 200
            try:
                if method != "GET":
                    raise ApiError(102, "This fake server is read-only", status=412)
                if path.startswith("/data/download/"):
                    body, ctype = download(self, path), "text/plain"
                elif endpoint:
                    body, ctype = route(self, endpoint), "text/xml"
                else:  # not an API path: the web server's own page
                    return 404, "text/html", self.not_found_page
            except ApiError as e:
                status, ctype, body = e.status, "text/xml", error_xml(e.code, e.message, e.additional)
            if fault is not None:  # malformed: cut the document in half
                body = body[: max(len(body) // 2, 1)]
            return status, ctype, body

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
        if status == 0:  # hang: hold the connection, then close it unanswered
            self._released.wait()
            handler.close_connection = True
            return
        send(handler, status, ctype, body)
