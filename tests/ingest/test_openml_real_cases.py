"""OpenML ingestion against what the real server does (issue 18, item 12).

Each case is served by the fake server as OpenML serves it: a dataset without qualities
(errors 362, 363, 364 with HTTP 412), an uploader whose account was deleted (left out
of ``user/list``), a wrong server path (an HTML 404), runs added or deleted in a listing
that has no order, and the ``openml`` client's version.
"""

from __future__ import annotations

import json
import tomllib
from importlib.metadata import version
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from metabo.exceptions import OpenMLResponseError
from metabo.ingest.openml import NO_QUALITIES_FLAG
from metabo.kb import KnowledgeBase
from metabo.testing.openml_server import FakeRun
from metabo.testing.openml_server.xml import HTML_ERROR

N_RUNS = 10
NO_QUALITIES = {
    362: "OpenML error 362: No qualities found",
    363: "OpenML error 363: Dataset not processed yet",
    364: "OpenML error 364: Dataset processed with error - ARFF parse error in line 3",
}


def _flags(kb: KnowledgeBase, dataset_id: str) -> dict:
    return kb.get_dataset(dataset_id)["flags"]


def _meta_features(kb: KnowledgeBase, dataset_id: str) -> int:
    return int(kb.query("SELECT count(*) FROM meta_features WHERE dataset_id = ?", [dataset_id]).iloc[0, 0])


# ---------------------------------------------------------------------- no qualities
@pytest.mark.parametrize("code", sorted(NO_QUALITIES))
def test_dataset_without_qualities_is_stored_flagged_and_the_ingestion_goes_on(ingest, kb, server, code):
    blobs = server.datasets[62]
    blobs.qualities, blobs.qualities_code = None, code
    blobs.processing_error = "ARFF parse error in line 3"
    report = ingest(page_size=4)
    assert report.runs_new == N_RUNS and report.datasets_without_qualities == (62,)
    assert [r.status for r in server.requested("data/qualities/62")] == [412]
    assert _flags(kb, "openml-62") == {NO_QUALITIES_FLAG: [NO_QUALITIES[code]]}
    assert _meta_features(kb, "openml-62") == 0
    assert kb.get_dataset("openml-62")["name"] == "blobs"
    assert _flags(kb, "openml-61") == {} and _meta_features(kb, "openml-61") > 0
    # a rerun does not stop at that page either
    assert ingest(page_size=4).runs_new == 0


def test_qualities_found_later_are_stored_and_the_flag_lifted(ingest, kb, server):
    computed = server.datasets[62].qualities
    server.datasets[62].qualities, server.datasets[62].qualities_code = None, 363
    ingest()
    assert NO_QUALITIES_FLAG in _flags(kb, "openml-62")
    server.datasets[62].qualities = computed  # OpenML has processed the dataset
    server.add_run(FakeRun(2000, 2, 100, {"predictive_accuracy": 0.8}))
    report = ingest()
    assert (report.runs_new, report.datasets_without_qualities) == (1, ())
    assert _flags(kb, "openml-62") == {}
    assert _meta_features(kb, "openml-62") == len(computed)
    assert kb.get_dataset("openml-62")["n_instances"] == 30


def test_flagged_dataset_and_its_page_roll_back_together(ingest, kb, server, snapshot, monkeypatch):
    server.datasets[62].qualities = None
    before = snapshot(kb)

    def killed(key, value):
        raise KeyboardInterrupt  # the process is stopped while writing the page

    monkeypatch.setattr(kb, "set_state", killed)
    with pytest.raises(KeyboardInterrupt):
        ingest()
    assert snapshot(kb) == before  # no dataset, flag, run or state of the page
    monkeypatch.undo()
    assert ingest().runs_new == N_RUNS


def test_cli_shows_the_flag(server, openml_cache, tmp_path, capsys):
    from metabo.cli.main import main

    server.datasets[62].qualities = None
    path = tmp_path / "cli.duckdb"
    KnowledgeBase(path).close()  # --kb names an existing store
    assert main(["ingest", "openml", "--kb", str(path), "--server", server.url, "--cache-dir",
                 str(openml_cache), "--task", "1", "--task", "2"]) == 0
    assert "datasets_without_qualities=(62,)" in capsys.readouterr().out
    assert main(["kb", "datasets", "--kb", str(path), "--format", "json"]) == 0
    rows = {r["dataset_id"]: r for r in json.loads(capsys.readouterr().out)}
    assert json.loads(rows["openml-62"]["flags"]) == {NO_QUALITIES_FLAG: [NO_QUALITIES[362]]}
    assert rows["openml-62"]["meta_features"] == 0


# ---------------------------------------------------------------------- deleted uploaders
@pytest.mark.parametrize("deleted", ["one", "all"])
def test_runs_of_deleted_uploaders_are_ingested(ingest, kb, server, deleted):
    server.users[7] = "someone"
    server.runs[1003].uploader = 7
    del server.users[7]  # the account is gone: user/list leaves it out
    if deleted == "all":
        server.users.clear()
    assert ingest().runs_new == N_RUNS
    assert not server.requested("user/list")  # uploaders are not needed


# ---------------------------------------------------------------------- wrong server URL
@pytest.mark.parametrize("path", ["/api/v2/xml", "", "/api/v1"])
@pytest.mark.parametrize("page", ["well-formed", "nginx"])
def test_a_wrong_server_path_fails_at_once_and_says_so(ingest, kb, server, snapshot, path, page):
    if page == "nginx":
        server.not_found_page = HTML_ERROR.format(status=404)
    before = snapshot(kb)
    url = server.base_url + path
    with pytest.raises(OpenMLResponseError, match="does not look like an OpenML API server") as info:
        ingest(server=url)
    assert f"{url}/evaluationmeasure/list answered HTTP 404 (text/html)" in str(info.value)
    assert "overloaded" not in str(info.value)
    assert [r.status for r in server.requests] == [404]  # one request, not retried
    assert snapshot(kb) == before


def test_a_busy_server_is_retried_before_it_is_judged(ingest, kb, server):
    server.fail_next(2, status=503, endpoint="evaluationmeasure/list")
    assert ingest().runs_new == N_RUNS
    assert [r.status for r in server.requested("evaluationmeasure/list")] == [503, 503, 200]


def test_an_unreachable_server_is_reported_as_one_we_could_not_connect_to(ingest, kb, server):
    url = server.url
    server.stop()  # nothing listens on its port any more
    with pytest.raises(OpenMLResponseError, match="could not connect to .*connection refused.*3 tries"):
        ingest(server=url)


# ---------------------------------------------------------------------- an unordered listing
def test_a_run_deleted_before_the_resume_point_skips_nothing(ingest, kb, server):
    ingest(page_size=4, max_runs=4)  # runs 1000-1003 stored, then stopped
    del server.runs[1000]  # deleted on OpenML: every later row moves up by one
    ingest(page_size=4)
    stored = set(kb.query("SELECT source FROM runs")["source"])
    assert stored == {f"openml-run:{r}" for r in range(1000, 1000 + N_RUNS)}


def test_a_run_added_before_the_resume_point_is_found(ingest, kb, server):
    ingest(page_size=4)
    # a new run listed ahead of stored ones (OpenML's listing has no order)
    server.add_run(FakeRun(999, 1, 101, {"predictive_accuracy": 0.6}))
    report = ingest(page_size=4)
    assert "openml-run:999" in set(kb.query("SELECT source FROM runs")["source"])
    assert kb.stats()["runs"] == N_RUNS + 1
    assert (report.runs_new, report.runs_listed) == (1, N_RUNS + 1)


# ---------------------------------------------------------------------- the client's version
def test_the_openml_pin_is_bounded_and_holds_the_installed_client():
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    (req,) = [Requirement(d) for d in pyproject["project"]["dependencies"] if d.startswith("openml")]
    assert any(spec.operator in ("<", "<=", "==", "~=") for spec in req.specifier), req
    assert req.specifier.contains(version("openml")), (req, version("openml"))
