"""OpenML ingestion against a server that misbehaves (issue 33).

Each bad input is served by the fake server with the real ``openml`` client talking to
it: a server that accepts connections and never answers, nothing listening, an unknown
host, a deleted setup, an unknown dataset (error 111), a setup that answers with another
flow's parameters, short pages and a listing whose order changes between pages. Each
test states what must hold: the call ends in bounded time with one clear line, what was
stored stays stored, and only the runs the bad answer concerns are left out.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from metabo.exceptions import InputDataError, OpenMLResponseError
from metabo.ingest.openml import map_flow, state_key
from metabo.ingest.openml_client import RetryPolicy
from metabo.ingest.openml_flows import setup_flow_mismatch
from metabo.kb import KnowledgeBase

N_RUNS = 10  # add_example_content: setups 100-104 x tasks 1, 2; runs 1000-1009
BOUND = 10.0  # seconds a call with a 2 s deadline must end within


def _bounded(fn: Callable[[], Any], limit: float = BOUND) -> tuple[Any, BaseException | None, float]:
    """Run ``fn`` in a thread; fail the test if it is still running after ``limit`` s.

    Returns its result, the exception it raised (or ``None``) and the seconds it took.
    """
    out: dict[str, Any] = {}

    def target() -> None:
        try:
            out["result"] = fn()
        except BaseException as e:  # noqa: BLE001 - handed back to the test
            out["error"] = e

    start = time.monotonic()
    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(limit)
    elapsed = time.monotonic() - start
    assert not thread.is_alive(), f"still running after {limit} s: the call does not end"
    return out.get("result"), out.get("error"), elapsed


def _sources(kb: KnowledgeBase) -> set[str]:
    return set(kb.query("SELECT source FROM runs")["source"])


def _store(path) -> str:
    """Create an empty store at ``path`` (``--kb`` names an existing store) and return it."""
    KnowledgeBase(path).close()
    return str(path)


def _messages(err: str) -> list[str]:
    """The lines of stderr, without the progress bar's."""
    return [line for line in err.strip().splitlines() if not line.startswith("OpenML runs:")]


def _runs(*ids: int) -> set[str]:
    return {f"openml-run:{r}" for r in ids}


ALL = tuple(range(1000, 1000 + N_RUNS))


# ---------------------------------------------------------------------- a hanging server
def test_a_hanging_server_ends_within_the_deadline_and_keeps_stored_pages(ingest, kb, server):
    # the second page is read by the server and never answered
    server.hang("evaluation/list/function/predictive_accuracy/limit/4/offset/4")
    policy = RetryPolicy(attempts=4, backoff=0.0, deadline=2.0)
    _, error, elapsed = _bounded(lambda: ingest(page_size=4, retry=policy))
    assert isinstance(error, OpenMLResponseError), error
    message = str(error)
    assert "\n" not in message
    assert "did not answer" in message and "offset/4" in message
    assert "deadline of 2 s" in message
    assert "4 new runs stored by this call are kept" in message
    assert 1.5 < elapsed < BOUND
    assert _sources(kb) == _runs(1000, 1001, 1002, 1003)  # the first page, intact
    server.release()
    assert ingest(page_size=4).runs_new == N_RUNS - 4
    assert _sources(kb) == _runs(*ALL)


def test_the_timeout_bounds_each_request_and_the_next_try_succeeds(ingest, kb, server):
    server.hang("evaluationmeasure/list", count=1)  # the first probe only
    policy = RetryPolicy(attempts=3, backoff=0.0, timeout=1.0, deadline=30.0)
    report, error, elapsed = _bounded(lambda: ingest(retry=policy))
    assert error is None, error
    assert report.runs_new == N_RUNS
    assert elapsed < BOUND
    assert [r.status for r in server.requested("evaluationmeasure/list")] == [0, 200]


def test_a_port_that_never_reads_ends_within_the_deadline(ingest, kb):
    # a listening socket nobody accepts: the kernel completes the connection, no one answers
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/api/v1/xml"
        _, error, elapsed = _bounded(lambda: ingest(server=url, retry=RetryPolicy(backoff=0.0, deadline=1.0)))
    assert isinstance(error, OpenMLResponseError) and "did not answer within the deadline of 1 s" in str(error)
    assert elapsed < BOUND


@pytest.mark.slow
@pytest.mark.parametrize("endpoint", ["evaluationmeasure/list", "setup/list", "data/61"])
def test_any_hanging_endpoint_ends_within_the_deadline(ingest, kb, server, snapshot, endpoint):
    before = snapshot(kb)
    server.hang(endpoint)
    _, error, elapsed = _bounded(lambda: ingest(retry=RetryPolicy(attempts=5, backoff=0.0, deadline=1.0)))
    assert isinstance(error, OpenMLResponseError) and "did not answer" in str(error), error
    assert elapsed < BOUND
    assert snapshot(kb) == before


def test_cli_hanging_server_is_one_error_line_within_the_deadline(server, openml_cache, tmp_path, capsys):
    from metabo.cli.main import main

    server.hang()
    argv = ["ingest", "openml", "--kb", _store(tmp_path / "cli.duckdb"), "--server", server.url, "--cache-dir",
            str(openml_cache), "--task", "1", "--timeout", "30", "--deadline", "2"]
    code, error, elapsed = _bounded(lambda: main(argv))
    assert error is None and code == 2, (code, error)
    assert elapsed < BOUND
    err = _messages(capsys.readouterr().err)
    assert len(err) == 1 and err[0].startswith("error: ") and "did not answer" in err[0], err


@pytest.mark.parametrize("option", [["--timeout", "0"], ["--timeout", "nan"], ["--timeout", "1e12"],
                                    ["--deadline", "-1"], ["--deadline", "inf"], ["--attempts", "0"]])
def test_cli_rejects_bad_timeouts_before_anything_runs(server, openml_cache, tmp_path, capsys, option):
    from metabo.cli.main import main

    path = tmp_path / "cli.duckdb"
    argv = ["ingest", "openml", "--kb", str(path), "--server", server.url, "--task", "1", *option]
    try:
        code = main(argv)
    except SystemExit as e:  # refused by the argument's own type
        code = e.code
    assert code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "error: " in err[0], err
    assert not server.requests and not path.exists()


def test_retry_policy_checks_its_values():
    for bad in ({"timeout": 0}, {"timeout": float("inf")}, {"timeout": 1e12}, {"deadline": 0},
                {"deadline": float("nan")}, {"deadline": 1e12}, {"attempts": 0}, {"backoff": float("nan")}):
        with pytest.raises(InputDataError):
            RetryPolicy(**bad)
    assert RetryPolicy(deadline=None).deadline is None


# ---------------------------------------------------------------------- no server
def test_connection_refused_says_could_not_connect(ingest, kb, server):
    url = server.url
    server.stop()  # nothing listens on its port any more
    _, error, _ = _bounded(lambda: ingest(server=url))
    assert isinstance(error, OpenMLResponseError)
    message = str(error)
    assert "could not connect" in message and "connection refused" in message, message
    assert "overloaded" not in message and "RetryPolicy(attempts" not in message


def test_unknown_host_says_could_not_connect(ingest, kb):
    _, error, _ = _bounded(lambda: ingest(server="http://openml.invalid/api/v1/xml"))
    assert isinstance(error, OpenMLResponseError)
    assert "could not connect" in str(error) and "unknown host" in str(error), error
    assert "overloaded" not in str(error)


def test_cli_connection_refused(server, openml_cache, tmp_path, capsys):
    from metabo.cli.main import main

    url = server.url
    server.stop()
    argv = ["ingest", "openml", "--kb", _store(tmp_path / "cli.duckdb"), "--server", url, "--task", "1",
            "--attempts", "2"]
    assert main(argv) == 2
    err = _messages(capsys.readouterr().err)
    assert err[-1].startswith("error: ") and "could not connect" in err[-1] and "--server" in err[-1], err


# ---------------------------------------------------------------------- missing setups and datasets
def test_a_deleted_setup_costs_only_its_runs(ingest, kb, server, snapshot):
    server.setups[101].deleted = True  # runs 1001 and 1006 still listed
    report = ingest(page_size=4)
    assert report.missing_setups == (101,)
    assert (report.runs_new, report.runs_unavailable) == (N_RUNS - 2, 2)
    assert _sources(kb) == _runs(*ALL) - _runs(1001, 1006)
    key = state_key(server.url, "predictive_accuracy", [1, 2], [])
    assert kb.get_state(key)["missing"] == {"setups": [101], "datasets": []}
    before = snapshot(kb)
    again = ingest(page_size=4)  # the rerun stores nothing and fails nothing
    assert (again.runs_new, again.missing_setups, again.runs_unavailable) == (0, (101,), 2)
    assert snapshot(kb) == before


def test_a_page_of_only_deleted_setups_is_not_an_error(ingest, kb, server):
    server.setups[101].deleted = True  # OpenML answers the setup listing with "no results"
    report = ingest(flow_ids=(20,))
    assert (report.runs_new, report.missing_setups, report.runs_unavailable) == (0, (101,), 2)
    assert [r.status for r in server.requested("setup/list")] == [412]


def test_a_setup_back_on_openml_is_stored_and_no_longer_flagged(ingest, kb, server):
    server.setups[101].deleted = True
    ingest()
    server.setups[101].deleted = False
    report = ingest()
    assert (report.runs_new, report.missing_setups) == (2, ())
    key = state_key(server.url, "predictive_accuracy", [1, 2], [])
    assert kb.get_state(key)["missing"] == {"setups": [], "datasets": []}
    assert _sources(kb) == _runs(*ALL)


def test_an_unknown_dataset_costs_only_its_runs(ingest, kb, server, snapshot):
    server.datasets[62].deleted = True  # data/62 answers OpenML error 111
    report = ingest(page_size=4)
    assert report.missing_datasets == (62,)
    assert (report.runs_new, report.runs_unavailable) == (5, 5)
    assert _sources(kb) == _runs(1000, 1001, 1002, 1003, 1004)  # task 1, on dataset 61
    assert [r.status for r in server.requested("data/62")][0] == 412
    assert kb.query("SELECT count(*) AS n FROM datasets WHERE openml_id = 62")["n"].iloc[0] == 0
    before = snapshot(kb)
    again = ingest(page_size=4)
    assert (again.runs_new, again.missing_datasets) == (0, (62,))
    assert snapshot(kb) == before


def test_cli_reports_what_is_missing(server, openml_cache, tmp_path, capsys):
    from metabo.cli.main import main

    server.setups[101].deleted = True
    server.datasets[62].deleted = True
    argv = ["ingest", "openml", "--kb", _store(tmp_path / "cli.duckdb"), "--server", server.url,
            "--cache-dir", str(openml_cache), "--task", "1", "--task", "2"]
    assert main(argv) == 0
    captured = capsys.readouterr()
    assert "runs_new=4" in captured.out
    assert "setups OpenML did not return: [101]" in captured.err
    assert "datasets OpenML does not know: [62]" in captured.err


# ---------------------------------------------------------------------- a setup of another flow
def test_a_setup_with_another_flows_parameters_is_skipped_and_counted(ingest, kb, server, snapshot):
    # setup 100 is listed under the random forest (flow 10) but answers with J48's parameters
    server.setups[100].parameters_from = 20
    report = ingest()
    assert report.wrong_flow_setups == (100,)
    assert (report.runs_wrong_flow, report.runs_new) == (2, N_RUNS - 2)
    assert _sources(kb) == _runs(*ALL) - _runs(1000, 1005)
    assert "random_forest" not in set(kb.query("SELECT algorithm FROM configurations")["algorithm"])
    before = snapshot(kb)
    again = ingest()
    assert (again.runs_new, again.wrong_flow_setups, again.runs_wrong_flow) == (0, (100,), 2)
    assert snapshot(kb) == before


def test_an_unmapped_flow_with_another_flows_parameters_is_skipped(ingest, kb, server):
    server.setups[101].parameters_from = 10  # J48 (flow 20) answering with random forest's
    report = ingest()
    assert (report.wrong_flow_setups, report.runs_wrong_flow) == ((101,), 2)
    assert _runs(1001, 1006).isdisjoint(_sources(kb))


def _param(flow_id: int, flow_name: str, name: str, value: str = "1") -> dict:
    return {"flow_id": flow_id, "flow_name": flow_name, "parameter_name": name,
            "full_name": f"{flow_name}(1)_{name}", "value": value}


def test_setup_flow_mismatch_rules():
    rf = "sklearn.ensemble._forest.RandomForestClassifier"
    j48 = [_param(20, "weka.J48", "C"), _param(20, "weka.J48", "M")]
    assert setup_flow_mismatch(10, f"{rf}(1)", 10, [_param(10, rf, "n_estimators")]) is None
    assert "weka.J48" in setup_flow_mismatch(10, f"{rf}(1)", 10, j48)
    # the setup itself says it belongs to another flow
    assert "flow 20" in setup_flow_mismatch(10, f"{rf}(1)", 20, [_param(10, rf, "n_estimators")])
    # a pipeline's components are its own
    pipe = "sklearn.pipeline.Pipeline(imputer=sklearn.impute._base.SimpleImputer,svc=sklearn.svm._classes.SVC)"
    params = [_param(30, pipe, "steps"), _param(31, "sklearn.impute._base.SimpleImputer", "strategy"),
              _param(32, "sklearn.svm._classes.SVC", "C")]
    assert setup_flow_mismatch(30, f"{pipe}(1)", 30, params) is None
    assert setup_flow_mismatch(30, f"{pipe}(1)", 30, [*params, _param(33, rf, "n_estimators")]) is not None
    # a flow whose name does not show its components: its own parameters vouch for the setup
    bag = [_param(60, "weka.Bagging_REPTree", "I"), _param(61, "weka.REPTree", "M")]
    assert setup_flow_mismatch(60, "weka.Bagging_REPTree(1)", 60, bag) is None
    assert setup_flow_mismatch(60, "weka.Bagging_REPTree(1)", 60, j48) is not None
    assert setup_flow_mismatch(10, f"{rf}(1)", 10, []) is None  # every parameter at its default
    # what the mismatch stored before: the random forest with scikit-learn's defaults
    assert map_flow(f"{rf}(1)", j48) == ("random_forest", {}, True)


# ---------------------------------------------------------------------- the listing
def test_short_pages_do_not_end_the_listing(ingest, kb, server):
    server.page_limit = 3  # the server answers at most 3 rows whatever the limit asks
    report = ingest(page_size=4)
    assert (report.runs_new, report.listing_incomplete) == (N_RUNS, None)
    assert _sources(kb) == _runs(*ALL)
    assert [int(r.filters["offset"]) for r in server.requested("evaluation/list")] == [0, 3, 6, 9, 10]


def test_a_listing_whose_order_changes_is_reported(ingest, kb, server):
    server.listing_orders = ["asc", "desc", "desc"]  # pages 2 and 3 list the runs backwards
    report = ingest(page_size=4)
    assert report.runs_new == 6 and _sources(kb) == _runs(*range(1000, 1006))
    assert report.listing_incomplete is not None
    assert "4 rows repeated" in report.listing_incomplete
    assert ingest(page_size=4).runs_new == 4  # the next call finds the rest
    assert _sources(kb) == _runs(*ALL)


def test_cli_says_the_listing_ended_early(server, openml_cache, tmp_path, capsys):
    from metabo.cli.main import main

    server.listing_orders = ["asc", "desc", "desc"]
    argv = ["ingest", "openml", "--kb", _store(tmp_path / "cli.duckdb"), "--server", server.url,
            "--cache-dir", str(openml_cache), "--task", "1", "--task", "2", "--page-size", "4"]
    assert main(argv) == 3
    err = capsys.readouterr().err
    assert "the listing ended early" in err and "6 new runs stored" in err, err
