"""The ensemble benchmark (scripts/bench_ensembles.py): ensemble searches run live on real
datasets held out from the knowledge base, judged by the test error of the model each
deploys (issues 7 and 20; Levesque 2018 sec. 4.4, Shen et al. 2022 sec. 4).

Protocol: each search is one :func:`metabo.ensembles.search.tune_ensemble` run per dataset
and seed: a stratified 20% test part drawn with the seed and 5-fold cross-validation of the
other 80% (``cv=5``; selection on out-of-fold predictions), ``--budget`` trials, 30 s and
4096 MB per fold fit, metric error rate. Every output's members are then refitted on the
whole 80% and scored on the 20% (``refit_test_error``, the deployed model: the thesis'
sec. 4.4.1 protocol); ``test_error`` keeps the members as trained (the mean of their fold
models). The warm searches' base strategy is the default warm start
(:class:`~metabo.strategies.portfolio.PortfolioWarmStart`) on the knowledge base without the
dataset's task and the tasks that may hold the same data
(:func:`benchmarks.warm_bench.held_out`).

Searches (``SEARCHES``) and their outputs (methods of the report):

- ``bo`` (GP-BO, post-hoc): ``bo-best`` (the trial of lowest cross-validated error, the
  single best of the search), ``bo-post`` (Caruana et al. 2004 selection without bagging, no guard),
  ``bo-bagged`` (bagged selection, Caruana et al. 2004), ``bo-guarded`` (bagged selection
  through the guard: what ``metabo tune --ensemble posthoc`` deploys);
- ``rs`` (random search), likewise ``rs-*``; ``warm`` (the default warm start), ``warm-*``;
- ``esmbo``: ``esmbo`` (its replicates' arg mins, majority vote), ``esmbo-guarded`` and
  ``esmbo-best`` (its single best trial);
- ``eo-<loss>`` (m = 12): ``eo-<loss>``, ``eo-<loss>-guarded``, ``eo-<loss>-post``
  (bagged selection over its pool) and ``eo-<loss>-best``;
- ``divbo``: ``divbo`` (its final selection), ``divbo-guarded``, ``divbo-best`` (its single
  best trial, "DivBO-");
- ``esmbo-warm``, ``divbo-warm``: the same around the default warm start (DivBO without its
  random start).
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
    "warm": ("posthoc", "warm", {}),
    "esmbo": ("esmbo", "gp", {}),
    "eo-squared_margin": ("eo", "gp", {"loss": "squared_margin"}),
    "eo-c_bound": ("eo", "gp", {"loss": "c_bound"}),
    "eo-sigmoid": ("eo", "gp", {"loss": "sigmoid"}),
    "divbo": ("divbo", "gp", {}),
    "esmbo-warm": ("esmbo", "warm", {}),
    "divbo-warm": ("divbo", "warm", {"n_init": 0}),
}
WARM = ("warm", "esmbo-warm", "divbo-warm")
EVALUATION = {"time_limit": 30.0, "memory_limit_mb": 4096, "metric": "error_rate", "post_size": 50, "cv": 5}


def outputs_of(search: str) -> list[str]:
    """The outputs (methods of the report) read from one ``search`` (module docstring)."""
    method = SEARCHES[search][0]
    if method == "posthoc":
        return [f"{search}-best", f"{search}-post", f"{search}-bagged", f"{search}-guarded"]
    if method == "eo":
        return [search, f"{search}-guarded", f"{search}-post", f"{search}-best"]
    return [search, f"{search}-guarded", f"{search}-best"]


def refitted_test_probas(data: Any, trials: Mapping[int, tuple[str, dict[str, Any]]], test_idx: np.ndarray,
                         seed: int) -> dict[int, np.ndarray]:
    """Trial number -> its configuration refitted on every non-test row, its test
    probabilities (a configuration that fails to refit is left out)."""
    from metabo.ensembles.model import EnsembleModel

    rows = np.setdiff1d(np.arange(data.n_instances), test_idx)
    out: dict[int, np.ndarray] = {}
    for number, (algorithm, params) in trials.items():
        try:
            model = EnsembleModel([(algorithm, params)], None, "average", seed).fit_dataset(data, rows)
            out[number] = model.predict_proba(data.X.iloc[test_idx])
        except Exception as e:  # noqa: BLE001 - a member that cannot be refitted is reported, not fatal
            logger.warning("trial %d %s did not refit: %s", number, algorithm, e)
    return out


def run_search(search: str, spec: str, task: str, seed: int, budget: int, past: Any, shared: Mapping[str, Any]
               ) -> dict[str, Any]:
    """One search on dataset ``spec`` (the knowledge base's ``task``); its outputs' errors."""
    from benchmarks.warm_bench import held_out, meta_of
    from metabo.ensembles.divbo import surrogate_kendall_tau
    from metabo.exceptions import InputDataError
    from metabo.ingest.build import load_for_training
    from metabo.strategies.portfolio import PortfolioWarmStart
    from metabo.tuning.ensemble import tune_ensemble

    method, base, options = SEARCHES[search]
    strategy: Any = base
    if base == "warm":
        past_wo = held_out(past, task, shared["same_content"])
        meta = meta_of(past, task)

        def strategy(s: int) -> Any:
            return PortfolioWarmStart(past_wo, meta, seed=s)

    data = load_for_training(spec).trainable  # as tune trains on it (KEEL's flagged columns repaired or dropped)
    if data is None:
        raise InputDataError(f"{spec}: nothing is left to train on")
    start = time.perf_counter()
    r = tune_ensemble(data, method=method, budget=budget, strategy=strategy, space=shared["space"], seed=seed,
                      metric=EVALUATION["metric"], time_limit=EVALUATION["time_limit"],
                      memory_limit_mb=EVALUATION["memory_limit_mb"], cv=shared.get("cv", EVALUATION["cv"]), guard=True,
                      meta_features=False, **options)
    seconds = time.perf_counter() - start
    y_valid, y_test, K = r.y_valid, r.y_test, r.n_classes
    chosen: dict[str, tuple[dict[int, float], str]] = {}
    for name in outputs_of(search):
        if name.endswith("-best"):
            chosen[name] = ({r.best.number: 1.0}, "average")
        elif name.endswith("-guarded"):
            chosen[name] = (r.weights, r.combine)
        elif name.endswith("-post") and method == "posthoc":
            chosen[name] = (select_from(r.valid_probas, y_valid, max_size=EVALUATION["post_size"]), "average")
        elif name.endswith("-post") or name.endswith("-bagged"):
            chosen[name] = (select_from(r.valid_probas, y_valid, max_size=EVALUATION["post_size"], n_bags=20,
                                        seed=seed), "average")
        else:
            chosen[name] = (r.search_weights, r.search_combine)
    members = sorted({k for w, _ in chosen.values() for k in w})
    refit_start = time.perf_counter()
    refitted = refitted_test_probas(data, {k: (r.history[k].algorithm, dict(r.history[k].params)) for k in members},
                                    r.test_idx, seed)
    refit_seconds = time.perf_counter() - refit_start
    out: dict[str, dict[str, Any]] = {}
    for name, (weights, combine) in chosen.items():
        deployed = (combined_error(weights, refitted, y_test, combine=combine, metric="error_rate", n_classes=K)
                    if all(k in refitted for k in weights) else math.nan)
        out[name] = {
            "valid_error": combined_error(weights, r.valid_probas, y_valid, combine=combine, metric="error_rate",
                                          n_classes=K),
            "test_error": combined_error(weights, r.test_probas, y_test, combine=combine, metric="error_rate",
                                         n_classes=K),
            "refit_test_error": deployed,
            "combine": combine,
            "diversity": mean_pairwise_diversity([r.valid_probas[k] for k in weights]),
            "members": {str(k): w for k, w in weights.items()},
        }
    g = r.guard
    record: dict[str, Any] = {
        "search": search, "task": task, "spec": spec, "seed": seed, "budget": budget, "seconds": seconds,
        "refit_seconds": refit_seconds, "cv": r.cv, "outputs": out,
        "guard": None if g is None else {"kept": g.kept, "combine": g.combine, "gain": g.gain, "se": g.se,
                                         "losses": g.losses},
        "n_failed": int(sum(not t.ok for t in r.history.completed)),
        "values": [float(t.value) if t.ok else math.nan for t in r.history.completed],
        "algorithms": [t.algorithm for t in r.history.completed],
    }
    numbers = sorted(r.valid_probas)
    if method == "divbo" and len(numbers) >= 5:
        space = shared["space"]
        X = space.encode_many([(r.history[k].algorithm, r.history[k].params) for k in numbers])
        record["kendall_tau"] = surrogate_kendall_tau(X, [r.valid_probas[k] for k in numbers], seed=seed)
    return record


def table(runs: Sequence[Mapping[str, Any]], outputs: Sequence[str], tasks: Sequence[str],
          key: str = "refit_test_error") -> tuple[np.ndarray, list[str]]:
    """(outputs, tasks finished by every output) mean ``key`` (the deployed model's test
    error by default) over seeds, and those tasks. An output without ``key`` (a run of the
    first benchmark, before deployed models were refitted) counts as not finished: two
    protocols are never mixed in one mean."""
    errors: dict[tuple[str, str], list[float]] = {}
    for run in runs:
        for name, o in run["outputs"].items():
            if key in o:
                errors.setdefault((name, run["task"]), []).append(float(o[key]))
    done = [t for t in tasks if all((o, t) in errors for o in outputs)]
    E = np.array([[np.mean(errors[(o, t)]) for t in done] for o in outputs])
    return E.reshape(len(outputs), len(done)), done


__all__ = ["EVALUATION", "SEARCHES", "WARM", "outputs_of", "refitted_test_probas", "run_search", "table"]
