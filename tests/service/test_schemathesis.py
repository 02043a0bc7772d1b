"""Schemathesis over every operation of the service, in process (ASGI), with and without
a token: the four phases of ``st run`` (schema examples, coverage, fuzzing, stateful
sequences), every check, schema-valid and schema-violating data; no failure allowed.

This is ``st run URL/openapi.json --checks all --mode all --phases
examples,coverage,fuzzing,stateful`` (plus the token header when there is one), bounded
(:data:`MAX_EXAMPLES` fuzzed cases per operation, :data:`MAX_STEPS` per stateful sequence)
and deterministic (a fixed seed, derandomized generation, no example database).

One setting differs from the defaults: a schema-valid request may be answered 422
(``positive_data_acceptance``). The schema states every rule that JSON Schema can state
(characters of names, bounds of numbers, one dataset of three, an outcome's value by its
status, probabilities in [0, 1]); what it cannot is refused with 422 and a reason: a rule
that depends on what is stored (a study's metric bounds its values, the stored tasks
must share a meta-feature with a query), on content (an upload must parse as CSV of at
least two classes, a configspace must deserialize) or on a registry (algorithm and
metric names). Every other check runs as Schemathesis ships it.
"""

from __future__ import annotations

import logging
from collections import Counter

import pytest
import schemathesis
from fastapi.testclient import TestClient
from schemathesis.config import SchemathesisConfig
from schemathesis.engine import Status, StopReason, events, from_schema

logger = logging.getLogger(__name__)
SEED = 33
MAX_EXAMPLES = 5
MAX_STEPS = 6
PHASES = ["examples", "coverage", "fuzzing", "stateful"]


def _config(token: str | None) -> SchemathesisConfig:
    config = SchemathesisConfig.from_dict({
        "seed": SEED,
        "checks": {"positive_data_acceptance": {"expected-statuses": ["2xx", "401", "404", "409", "422"]}},
        "phases": {"stateful": {"max-steps": MAX_STEPS}},
    })
    config.update(max_failures=None)
    project = config.projects.override
    if token is not None:
        project.update(headers={"Authorization": f"Bearer {token}"})
    project.phases.update(phases=PHASES)
    project.checks.update(included_check_names=["all"])
    project.generation.update(modes=["positive", "negative"], max_examples=MAX_EXAMPLES, deterministic=True,
                              database="none")
    return config


def run_schemathesis(client: TestClient, token: str | None) -> tuple[set[str], int, list[str]]:
    """Schemathesis against the app of ``client`` (started: its lifespan opened the store):
    the operations tested, the number of requests (cases) sent and one line per failed
    check or error."""
    operations: set[str] = set()
    cases = 0
    failures: Counter[str] = Counter()
    schema = schemathesis.openapi.from_asgi("/openapi.json", client.app, config=_config(token))
    for event in from_schema(schema).execute():
        if isinstance(event, events.ScenarioFinished):
            if event.label:
                operations.add(event.label)
            cases += len(event.recorder.cases)
            for case_id, checks in event.recorder.checks.items():
                for check in checks:
                    if check.status == Status.FAILURE:
                        case = event.recorder.cases[case_id].value
                        title = check.failure_info.failure.title if check.failure_info else ""
                        failures[f"{event.phase.value} {case.method} {case.path} {check.name}: {title}"] += 1
        elif isinstance(event, events.NonFatalError):
            failures[f"error in {event.label}: {event.info.message}"] += 1
        elif isinstance(event, events.FatalError):
            failures[f"fatal: {event.exception!r}"] += 1
        elif isinstance(event, events.EngineFinished):
            for failure in event.failures:  # checks run once after all scenarios
                failures[f"after the run: {failure.title}"] += 1
            if event.stop_reason != StopReason.COMPLETED:
                failures[f"the run stopped early: {event.stop_reason.value}"] += 1
    logger.info("schemathesis (token %s): %d operations, %d cases, %d failures", token is not None,
                len(operations), cases, sum(failures.values()))
    return operations, cases, [f"{n} x {line}" for line, n in sorted(failures.items())]


@pytest.mark.slow
@pytest.mark.parametrize("token", [None, "s3cret"], ids=["no token", "token"])
def test_schemathesis_finds_no_failure_on_any_operation(kb_path, serve_app, token):
    with serve_app(kb_path, token) as client:
        operations, cases, failures = run_schemathesis(client, token)
    assert failures == [], "\n".join(failures)
    assert len(operations) >= 13 and cases >= 13 * MAX_EXAMPLES, (sorted(operations), cases)


def test_the_run_reports_what_schemathesis_finds():
    """The harness fails on a defect: an operation answering 500 with an undocumented body."""
    from fastapi import FastAPI
    from fastapi.responses import JSONResponse

    app = FastAPI()

    @app.get("/boom")
    def boom() -> dict[str, int]:
        return JSONResponse({"oops": True}, status_code=500)  # type: ignore[return-value]

    with TestClient(app) as client:
        operations, cases, failures = run_schemathesis(client, None)
    assert operations == {"GET /boom"} and cases >= 1
    assert any("not_a_server_error" in f for f in failures), failures
