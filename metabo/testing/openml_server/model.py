"""The fake server's other content: tasks, flows (and their builders), setups, runs.

A :class:`FakeRun`'s ``evaluations`` feed both ``run/{id}`` and ``evaluation/list``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

SKLEARN_VERSION = "sklearn==1.5.0"


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

    ``parameters_from``: the flow whose parameters the setup answers with (default
    ``flow_id``); another flow's id reproduces a setup listed under one flow that carries
    another flow's parameters. ``deleted``: runs still list it, ``setup/{id}`` answers
    "Unknown setup" (281) and ``setup/list`` leaves it out.
    """

    sid: int
    flow_id: int
    values: dict[str, Any] = field(default_factory=dict)
    parameters_from: int | None = None
    deleted: bool = False


@dataclass
class FakeRun:
    """A run of a setup on a task with its aggregate ``evaluations`` (function -> value)."""

    rid: int
    task_id: int
    setup_id: int
    evaluations: dict[str, float | None] = field(default_factory=dict)
    uploader: int = 1
    upload_time: str = "2024-01-01 00:00:00"
