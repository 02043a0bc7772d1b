"""The ensemble benchmark (scripts/bench_ensembles.py): ensemble searches run live on real
datasets, judged by the test error of what each returns (issue 7; Levesque 2018 sec. 4.4,
Shen et al. 2022 sec. 4).

Searches (one run each per dataset and seed, :func:`metabo.ensembles.search.tune_ensemble`,
a stratified 60/20/20 hold-out drawn with the seed, ``--budget`` trials, 30 s and 4096 MB
per evaluation, metric error rate) and what is read from each:

- ``bo`` (GP-BO, the project's ``gp``): ``bo-best`` (the trial of lowest validation error),
  ``bo-post`` (ensemble selection, Caruana et al., over all its models);
- ``rs`` (random search): ``rs-best``, ``rs-post``;
- ``esmbo`` (GP-BO per replicate): ``esmbo``;
- ``eo-<loss>`` (GP-BO on ``L(E_i U {h})``, m = 12) for the squared margin, the C-bound and
  the smooth zero-one: ``eo-<loss>``, and ``eo-<loss>-post`` (ensemble selection over its pool);
- ``divbo``: ``divbo`` (its final ensemble selection) and ``divbo-best`` (its single best
  trial: "DivBO-", DivBO without the post-hoc step);
- warm-started: ``esmbo-rlgp``, ``eo-rlgp`` (squared margin) and ``divbo-rlgp``, whose base
  strategy is RLGP (warm, no random start) on the knowledge base with the benchmarked
  dataset's task left out (:func:`metabo.benchmarks.transfer_methods.make_method`).

Test errors are the ensembles' members as trained on the training part, combined on the
test part (DivBO's protocol; no refit). Per output: mean test error per dataset (over
seeds), average rank (ties shared), Friedman p and Nemenyi critical difference, Wilcoxon
p-values against ``bo-best`` and ``bo-post`` (:func:`metabo.benchmarks.compare.summarize`),
the mean pairwise diversity (DivBO eq. 3) of each final ensemble, and the diversity
surrogate's Kendall tau on held-out pairs of each DivBO run's models
(:func:`metabo.ensembles.divbo.surrogate_kendall_tau`).
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from metabo.ensembles.search import combined_error, mean_pairwise_diversity
from metabo.ensembles.selection import select_from

logger = logging.getLogger(__name__)

#: search -> (ensemble method, base strategy, search options)
SEARCHES: dict[str, tuple[str, str, dict[str, Any]]] = {
    "bo": ("posthoc", "gp", {}),
    "rs": ("posthoc", "random", {}),
    "esmbo": ("esmbo", "gp", {}),
    "eo-squared_margin": ("eo", "gp", {"loss": "squared_margin"}),
    "eo-c_bound": ("eo", "gp", {"loss": "c_bound"}),
    "eo-sigmoid": ("eo", "gp", {"loss": "sigmoid"}),
    "divbo": ("divbo", "gp", {}),
    "esmbo-rlgp": ("esmbo", "rlgp-warm", {}),
    "eo-rlgp": ("eo", "rlgp-warm", {"loss": "squared_margin"}),
    "divbo-rlgp": ("divbo", "rlgp-warm", {"n_init": 0}),
}
WARM = ("esmbo-rlgp", "eo-rlgp", "divbo-rlgp")
EVALUATION = {"time_limit": 30.0, "memory_limit_mb": 4096, "metric": "error_rate", "post_size": 50}


def outputs_of(search: str) -> list[str]:
    """The outputs (methods of the report) read from one ``search`` (module docstring)."""
    if search in ("bo", "rs"):
        return [f"{search}-best", f"{search}-post"]
    if search.startswith("eo-") and search != "eo-rlgp":
        return [search, f"{search}-post"]
    if search == "divbo":
        return ["divbo", "divbo-best"]
    return [search]


def run_search(search: str, spec: str, task: str, seed: int, budget: int, past: Any, shared: Mapping[str, Any]
               ) -> dict[str, Any]:
    """One search on dataset ``spec`` (the knowledge base's ``task``); its outputs' errors."""
    from metabo.benchmarks.transfer_methods import make_method
    from metabo.ensembles.divbo import surrogate_kendall_tau
    from metabo.ensembles.search import tune_ensemble

    method, base, options = SEARCHES[search]
    strategy: Any = base
    if search in WARM:
        past_wo = past.without(task)

        def strategy(s: int) -> Any:
            return make_method(base, past_wo, task, s, shared)

    start = time.perf_counter()
    r = tune_ensemble(spec, method=method, budget=budget, strategy=strategy, space=shared["space"], seed=seed,
                      metric=EVALUATION["metric"], time_limit=EVALUATION["time_limit"],
                      memory_limit_mb=EVALUATION["memory_limit_mb"], **options)
    seconds = time.perf_counter() - start
    y_valid, y_test, K = r.y_valid, r.y_test, r.n_classes
    out: dict[str, dict[str, Any]] = {}

    def add(name: str, weights: Mapping[int, float], combine: str) -> None:
        out[name] = {
            "valid_error": combined_error(weights, r.valid_probas, y_valid, combine=combine, metric="error_rate",
                                          n_classes=K),
            "test_error": combined_error(weights, r.test_probas, y_test, combine=combine, metric="error_rate",
                                         n_classes=K),
            "diversity": mean_pairwise_diversity([r.valid_probas[k] for k in weights]),
            "members": {str(k): w for k, w in weights.items()},
        }

    numbers = sorted(r.valid_probas)
    for name in outputs_of(search):
        if name.endswith("-best"):
            add(name, {r.best.number: 1.0}, "average")
        elif name.endswith("-post") and search not in ("bo", "rs"):
            add(name, select_from(r.valid_probas, y_valid, metric="error_rate", max_size=EVALUATION["post_size"]),
                "average")
        else:
            add(name, r.weights, r.combine)
    record: dict[str, Any] = {
        "search": search, "task": task, "spec": spec, "seed": seed, "budget": budget, "seconds": seconds,
        "outputs": out, "n_failed": int(sum(not t.ok for t in r.history.completed)),
        "values": [float(t.value) if t.ok else math.nan for t in r.history.completed],
    }
    if method == "divbo" and len(numbers) >= 5:
        space = shared["space"]
        X = space.encode_many([(r.history[k].algorithm, r.history[k].params) for k in numbers])
        record["kendall_tau"] = surrogate_kendall_tau(X, [r.valid_probas[k] for k in numbers], seed=seed)
    return record


def table(runs: Sequence[Mapping[str, Any]], outputs: Sequence[str], tasks: Sequence[str]
          ) -> tuple[np.ndarray, list[str]]:
    """(outputs, tasks finished by every output) mean test error over seeds, and those tasks."""
    errors: dict[tuple[str, str], list[float]] = {}
    for run in runs:
        for name, o in run["outputs"].items():
            errors.setdefault((name, run["task"]), []).append(float(o["test_error"]))
    done = [t for t in tasks if all((o, t) in errors for o in outputs)]
    E = np.array([[np.mean(errors[(o, t)]) for t in done] for o in outputs])
    return E.reshape(len(outputs), len(done)), done


__all__ = ["EVALUATION", "SEARCHES", "WARM", "outputs_of", "run_search", "table"]
