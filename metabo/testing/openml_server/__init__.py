"""A local, in-memory OpenML server for tests of code that uses the real ``openml`` client.

:class:`FakeOpenMLServer` answers OpenML's XML API v1 (``/api/v1/xml/...``) on
127.0.0.1 from objects the test builds: :class:`FakeDataset` (data as ARFF, features,
qualities), :class:`FakeTask`, :class:`FakeFlow`, :class:`FakeSetup` and
:class:`FakeRun` (whose ``evaluations`` feed the evaluation listing). Responses copy the
shapes of the real server (see ``openml-api-samples``) and of what the installed client
parses; they are gzip-compressed as OpenML's are.

Endpoints: ``data/{id}``, ``data/features/{id}``, ``data/qualities/{id}``,
``data/list``, ``task/{id}``, ``task/list``, ``estimationprocedure/list``,
``evaluationmeasure/list``, ``flow/{id}``, ``flow/list``, ``setup/{id}``,
``setup/list``, ``run/{id}``, ``run/list``, ``evaluation/list``, ``user/list``, and
the ARFF download ``/data/download/{file_id}/{name}.arff`` that dataset descriptions
point to (no ``parquet_url`` is announced, so the client reads ARFF). List calls page
with ``/limit/N/offset/M``; a page past the end is HTTP 412 with OpenML's "no results"
code of that listing (542 evaluations, 674 setups, 372 datasets, 482 tasks, 500 flows,
512 runs), which the client's pager takes as the end.

What the real server does, reproduced: a dataset with ``qualities=None`` answers
``data/qualities/{id}`` with error 362, 363 or 364 (``FakeDataset.qualities_code``);
``user/list`` leaves out users not in :attr:`FakeOpenMLServer.users` (deleted
accounts); a path outside ``/api/v1/xml/`` is a web server's HTML 404
(:attr:`FakeOpenMLServer.not_found_page`); the evaluation listing is in run id order,
so a run added with a lower id lands before runs listed earlier, as it can on OpenML,
whose listing has no order.

Test hooks: :meth:`FakeOpenMLServer.fail_next` (the next K responses are HTTP 500, or
412 with an OpenML error code), :meth:`FakeOpenMLServer.malform` (truncated XML for an
endpoint), :meth:`FakeOpenMLServer.hang` (requests read and never answered),
:attr:`FakeOpenMLServer.page_limit` (short pages), :attr:`FakeOpenMLServer.listing_orders`
(an evaluation listing whose order changes between pages), ``deleted`` datasets and
setups (runs still list them, their endpoints answer "unknown"), a setup answering with
another flow's parameters (``FakeSetup.parameters_from``) and
:attr:`FakeOpenMLServer.requests` (the request log).

Modules: :mod:`.dataset` and :mod:`.model` (the content and its builders),
:mod:`.xml`, :mod:`.xml_data`, :mod:`.xml_flows` and :mod:`.xml_runs` (each endpoint's
XML), :mod:`.api` (errors, lookups, list filters, paging), :mod:`.http` (handler,
routing, gzip), :mod:`.faults` (fault injection, request log), :mod:`.server` (the
server) and :mod:`.examples` (:func:`add_example_content`).

Usage::

    with FakeOpenMLServer() as server:
        server.add_dataset(FakeDataset.from_frame(61, "iris", frame, target="class"))
        openml.config.server = server.url
"""

from metabo.testing.openml_server.api import API_PREFIX, NO_RESULT_CODES, ApiError
from metabo.testing.openml_server.dataset import FakeDataset
from metabo.testing.openml_server.examples import RF_CLASS, SVC_CLASS, add_example_content, example_frames
from metabo.testing.openml_server.faults import LoggedRequest
from metabo.testing.openml_server.model import (
    SKLEARN_VERSION,
    FakeFlow,
    FakeRun,
    FakeSetup,
    FakeTask,
    pipeline_flow,
    sklearn_flow,
    weka_flow,
)
from metabo.testing.openml_server.server import FakeOpenMLServer
from metabo.testing.openml_server.xml import NS, TASK_TYPES

__all__ = [
    "API_PREFIX",
    "NO_RESULT_CODES",
    "NS",
    "RF_CLASS",
    "SKLEARN_VERSION",
    "SVC_CLASS",
    "TASK_TYPES",
    "ApiError",
    "FakeDataset",
    "FakeFlow",
    "FakeOpenMLServer",
    "FakeRun",
    "FakeSetup",
    "FakeTask",
    "LoggedRequest",
    "add_example_content",
    "example_frames",
    "pipeline_flow",
    "sklearn_flow",
    "weka_flow",
]
