"""A CASH space inferred from recorded configurations (PMF's list-valued pipelines):
round trips, the encoding against the pipeline vectors, and use by an unchanged strategy."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metabo.exceptions import InputDataError, InvalidConfigurationError, UnknownAlgorithmError
from metabo.kb.canonical import config_id
from metabo.metadatasets.inferred_space import InferredSpace
from metabo.space.finite import FiniteCASHSpace
from metabo.space.hyperparameters import Categorical, Constant, Float

FIXTURE = Path(__file__).parents[1] / "fixtures" / "metadatasets" / "deeppipe"


def pmf_like(n: int = 30, seed: int = 0) -> list[tuple[str, dict]]:
    """PMF-shaped stored pipelines: a selector choosing the preprocessor block (length 3 or
    2), an estimator block with one constant entry, two algorithms with ':' in their names."""
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        pre = int(i % 2)
        x_pre = [1.0, *np.round(rng.random(2), 3).tolist()] if pre == 0 else np.round(rng.random(2), 3).tolist()
        est = [1.0, 0.25, *np.round(rng.random(3), 3).tolist()]
        out.append((f"pmf:estimator-{i % 3 % 2}", {"preprocessor": pre, "x_estimator": est, "x_preprocessor": x_pre}))
    return out


def test_flat_names_conditions_and_kinds() -> None:
    inferred = InferredSpace.from_configurations(pmf_like())
    assert inferred.space.algorithms == ("pmf.estimator-0", "pmf.estimator-1")
    s = inferred.space["pmf.estimator-0"]
    assert isinstance(s["preprocessor"], Categorical) and s["preprocessor"].choices == (0, 1)
    # entries 0 and 1 of the estimator block never vary: fixed in the layout, not searched
    assert [n for n in s.names if n.startswith("x_estimator")] == ["x_estimator_2", "x_estimator_3", "x_estimator_4"]
    # each preprocessor's block has coordinates of its own, active only under it
    assert {n for n in s.names if n.startswith("x_preprocessor")} == {
        "x_preprocessor_0_1", "x_preprocessor_0_2", "x_preprocessor_1_0", "x_preprocessor_1_1"}
    assert {(c.child, c.values) for c in s.conditions} == {
        ("x_preprocessor_0_1", (0,)), ("x_preprocessor_0_2", (0,)),
        ("x_preprocessor_1_0", (1,)), ("x_preprocessor_1_1", (1,))}
    assert all(isinstance(s[n], Float) for n in s.names if n.startswith("x_"))


@settings(max_examples=15, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 40))
def test_round_trip_keeps_params_and_config_ids(seed: int, n: int) -> None:
    stored = pmf_like(n, seed)
    inferred = InferredSpace.from_configurations(stored)
    for algorithm, params in stored:
        flat = inferred.to_flat(algorithm, params)
        back = inferred.to_stored(*flat)
        assert back == (algorithm, params)
        assert config_id(*back) == config_id(algorithm, params)
        assert all(not isinstance(v, list) for v in flat[1].values())


def test_encoding_is_the_pipeline_vector_min_max_scaled() -> None:
    stored = pmf_like(40, 1)
    inferred = InferredSpace.from_configurations(stored)
    space = inferred.space
    for algorithm, params in stored:
        a, flat = inferred.to_flat(algorithm, params)
        x = space.encode(a, flat)
        block = x[space.slices[a]]
        names = space[a].names
        same = [p for b, p in stored if b == algorithm]
        pre = params["preprocessor"]
        for i, v in enumerate(params["x_estimator"]):
            col = [p["x_estimator"][i] for p in same]
            if min(col) < max(col):
                assert block[names.index(f"x_estimator_{i}")] == pytest.approx((v - min(col)) / (max(col) - min(col)))
        for i, v in enumerate(params["x_preprocessor"]):
            col = [p["x_preprocessor"][i] for p in same if p["preprocessor"] == pre]
            if min(col) < max(col):
                assert block[names.index(f"x_preprocessor_{pre}_{i}")] == pytest.approx(
                    (v - min(col)) / (max(col) - min(col)))
        other = 1 - pre  # the block the pipeline does not select encodes as 0
        assert all(block[j] == 0.0 for j, n in enumerate(names) if n.startswith(f"x_preprocessor_{other}_"))
        assert block[names.index("preprocessor")] == (pre + 0.5) / 2
        assert x[space.algorithms.index(a)] == 1.0


def test_the_shipped_pmf_fixture_round_trips() -> None:
    from metabo.metadatasets.deeppipe import PMF

    frame = PMF(FIXTURE).configurations()
    stored = [(a, json.loads(p)) for a, p in zip(frame["algorithm"], frame["params"])]
    inferred = InferredSpace.from_configurations(stored)
    assert all(inferred.to_stored(*inferred.to_flat(a, p)) == (a, p) for a, p in stored)


def test_a_strategy_runs_unchanged_on_the_flat_candidates() -> None:
    from metabo.optimizer import GPBO, Optimizer

    stored = pmf_like(40, 2)
    inferred = InferredSpace.from_configurations(stored)
    flat = [inferred.to_flat(a, p) for a, p in stored]
    values = {config_id(a, p): float(np.sum(list(p.values()))) for a, p in flat}
    opt = Optimizer(FiniteCASHSpace(inferred.space, flat), GPBO(n_init=3, seed=0), seed=0)
    for _ in range(6):
        trial = opt.ask()
        assert trial.config_id in values
        opt.tell(trial, values[trial.config_id])


def test_errors_name_the_problem() -> None:
    inferred = InferredSpace.from_configurations(pmf_like())
    a, p = pmf_like()[0]
    with pytest.raises(UnknownAlgorithmError):
        inferred.to_flat("pmf:unknown", p)
    with pytest.raises(InvalidConfigurationError, match="holds"):
        inferred.to_flat(a, {**p, "x_estimator": [0.5, *p["x_estimator"][1:]]})  # a fixed entry changed
    with pytest.raises(InvalidConfigurationError):
        inferred.to_flat(a, {**p, "x_preprocessor": [0.1]})
    with pytest.raises(InputDataError, match="determines"):
        InferredSpace.from_configurations([("a", {"v": [1.0]}), ("a", {"v": [1.0, 2.0]})])
    with pytest.raises(InputDataError):
        InferredSpace.from_configurations([])
    assert isinstance(InferredSpace.from_configurations([("a", {"k": "x", "v": [1.0]})]).space["a"]["k"], Constant)
