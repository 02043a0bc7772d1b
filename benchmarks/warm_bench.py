"""The warm-start benchmarks that cannot flatter (scripts/bench_warm.py): every method on
tasks held out of the knowledge base, scored where the transfer was not fitted.

Protocols (a task ``t`` is held out: its runs, and those of every task with the same
content fingerprint, are removed from the past the methods transfer from):

- ``surrogate``: ``t``'s objective is :class:`~benchmarks.surrogate_task.SurrogateTask`,
  a random forest per algorithm fitted on all of ``t``'s recorded runs, queried anywhere in
  the space; candidates come from each method's own search, not the recorded grid. The
  space is the CASH space of the algorithms ``t`` has runs of.
- ``live``: ``t`` tuned with models really trained (:func:`benchmarks.transfer_live.live_run`),
  each trial scored as ``metabo tune`` scores it (``--evaluation tune``, the default:
  :class:`~benchmarks.transfer_live.TuneSplit`, 5-fold CV of the 80% not kept for
  test up to 3,000 rows, else the 60/20/20 hold-out, on the splits of seed 0 that
  ``kb build --cv auto`` measured the knowledge base on) or as the earlier hold-out
  knowledge base was measured (``--evaluation kb``: its 60/20/20 split, training capped at
  2,000 rows), over the full CASH space (algorithms the knowledge base never ran
  included); the selected configuration's test error is recorded. Regret is normalized by
  the best and worst validation error seen on ``t`` by any method and seed together with
  ``t``'s recorded runs (the knowledge base's range).

Methods (:data:`METHODS`): ``random``; ``gp`` (cold GP-BO, the ``gp`` strategy's defaults);
``optuna-tpe`` (Optuna's TPE over the same space, continuous); ``knn`` (5 nearest tasks'
best, then GP-BO); ``rgpe`` and ``rlgp`` (first pick from the base GPs); ``rlgp-opa`` (the
RLGP paper's mode: one configuration per algorithm in turn); ``scot``; ``warm``
(:class:`~metabo.strategies.portfolio.PortfolioWarmStart`, the default warm start). A
reference, surrogate protocol only: ``oracle`` (:class:`RecordedOrder`, the held-out
task's own recorded configurations best first: the floor of proposing recorded ones).
Variants for ablations: ``warm@key=value@...`` (the options that lost:
:mod:`benchmarks.warm_variants`), ``rlgp@key=value@...``, ``rgpe@...``
(:func:`method_options`; ``rlgp@search=joint``: RLGP's acquisition searched over the whole
CASH space at once).
The option ``measured=kb|tune`` (any method) transfers from the runs measured that way only
(:func:`measured_protocols`: the earlier hold-out knowledge base, or ``metabo tune``'s
protocol), so the old and the new knowledge are compared in one run on one normalization.
The option ``space=base`` (any method, live protocol) searches the space before the algorithms
added for OBOE's grid (:func:`space_of`). ``oboe`` (not in the default list: it needs ``metabo ingest oboe``):
OBOE's own selection (:class:`~metabo.strategies.matrix_completion.OBOESelection`)
on the past tasks from OBOE's meta-dataset. The option ``knowledge=<source>+<source>`` (any
method) limits the past to the tasks of those sources (``warm@knowledge=keel``: the 42
KEEL tasks of the shipped knowledge base only).

Same data under another name: a past task is held out with ``t`` when it has ``t``'s
content fingerprint, and, for past tasks stored without their data (OpenML ids from a
meta-dataset), when it may be ``t`` (:func:`possible_copies`).

Report (:func:`report`): mean normalized regret at 1, 3, 5, 10, 25, 50 and average ranks
(:func:`benchmarks.compare.summarize`, each task's regret averaged over seeds; Friedman
and Wilcoxon over tasks), Wilcoxon over runs (task x seed) against ``gp`` and ``knn``, the
evaluation at which ``gp``'s mean regret first reaches each method's mean regret at 5,
distinct algorithms in the first 15 evaluations, seconds per suggestion at 50 observations,
test error (live), and a plot.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.compare import REPORT_AT, first_reach, format_table, plot_curves, summarize, wilcoxon_p
from metabo.exceptions import InputDataError
from metabo.kb.past import PastRuns
from metabo.space.cash import CASHSpace
from metabo.strategies.base import Config

logger = logging.getLogger(__name__)

METHODS = ("random", "gp", "optuna-tpe", "knn", "rgpe", "rlgp", "rlgp-opa", "scot", "warm")
#: The methods that need the surrogate bank.
BANK_METHODS = ("rgpe", "rlgp", "rlgp-opa")


class OptunaTPE:
    """Optuna's TPE sampler as a strategy over a continuous CASH space: the observed
    trials are added to its study before each ask (needs the ``optuna`` extra). Optuna may
    propose a configuration already evaluated (an algorithm with one configuration, say),
    which the ask/tell loop does not repeat: such a proposal is told its known value again
    and TPE asked anew; after 20 repeats in a row a uniform configuration is taken."""

    name = "optuna-tpe"

    def __init__(self, *, seed: int = 0) -> None:
        self.seed = int(seed)
        self._peer: Any = None
        self._told = 0

    def __repr__(self) -> str:
        return f"OptunaTPE(seed={self.seed})"

    def suggest(self, history: Any, space: CASHSpace, rng: np.random.Generator) -> Config:
        from benchmarks.peers import OptunaSuggester
        from metabo.kb.canonical import config_id

        if self._peer is None:
            self._peer = OptunaSuggester(space, self.seed, sampler="tpe")
        done = [r for r in history.completed if r.ok]
        if len(done) > self._told:
            new = done[self._told:]
            self._peer.observe([(r.algorithm, dict(r.params)) for r in new], [float(r.value) for r in new])
            self._told = len(done)
        values = {r.config_id: float(r.value) for r in done}
        for _ in range(20):
            algorithm, params = self._peer.ask()
            self._peer.discard()
            cid = config_id(algorithm, params)
            if cid not in history.config_ids:
                return algorithm, dict(params)
            if cid in values:  # a repeat (e.g. an algorithm with one configuration): TPE sees its value again
                self._peer.observe([(algorithm, params)], [values[cid]])
        from metabo.strategies.base import random_configuration

        return random_configuration(space, rng, history.config_ids)  # TPE insists on repeats


class RecordedOrder:
    """A reference, not a transfer method (``oracle``): the held-out task's own recorded
    configurations in increasing order of their recorded value, i.e. what a perfect
    transfer of the recorded grid would propose. Its regret on the surrogate objective is
    the floor that proposing recorded configurations can reach there (the forest's value at
    a recorded configuration is smoothed by its neighbours)."""

    name = "oracle"

    def __init__(self, past_all: PastRuns, task: str) -> None:
        self.runs = sorted(((float(v), a, p) for a, g in past_all.task_runs(task).items()
                            for p, v in zip(g.params, g.values)), key=lambda r: r[0])

    def suggest(self, history: Any, space: CASHSpace, rng: np.random.Generator) -> Config:
        from metabo.kb.canonical import config_id
        from metabo.strategies.base import random_configuration

        for _, a, p in self.runs:
            if a in space:
                a2, p2 = space.normalize(a, p)
                if config_id(a2, p2) not in history.config_ids:
                    return a2, p2
        return random_configuration(space, rng, history.config_ids)


def held_out(past: PastRuns, task: str, same_content: Mapping[str, Sequence[str]]) -> PastRuns:
    """The past without ``task`` and the tasks holding the same data."""
    return past.without({task, *same_content.get(task, ())})


def same_content_groups(datasets: Any, meta_features: Any) -> dict[str, list[str]]:
    """Task -> the other tasks that hold (or may hold) its data: those with its content
    fingerprint, and its :func:`possible_copies`. ``datasets``: the knowledge base's
    datasets table (dataset_id, fingerprint, n_instances, n_classes, n_features)."""
    groups: dict[str, list[str]] = {}
    for _, part in datasets.dropna(subset=["fingerprint"]).groupby("fingerprint"):
        ids = part["dataset_id"].tolist()
        for d in ids:
            groups[d] = [x for x in ids if x != d] + possible_copies(datasets, meta_features, d)
    return groups


def possible_copies(datasets: Any, meta_features: Any, task: str) -> list[str]:
    """The tasks stored without content (no ``fingerprint``) that may hold ``task``'s data:
    ``n_instances`` between 0.9 and 2 times ``task``'s (a KEEL copy of a UCI dataset often
    drops the rows with missing values: KEEL's housevotes has 232 of vote's 435), the same
    number of classes and at most 2 features more or fewer where both are known
    (``datasets`` columns or the meta-features NumberOfClasses / NumberOfFeatures). A
    rule that holds out more than the copies, never fewer of them: what it removes wrongly
    is knowledge the transfer does not get."""
    import pandas as pd

    d = datasets.set_index("dataset_id")
    if task not in d.index:
        return []
    mf = meta_features

    def known(ids: Any, column: str, quality: str) -> pd.Series:
        own = pd.to_numeric(d[column].reindex(ids), errors="coerce") if column in d else pd.Series(np.nan, ids)
        if quality in getattr(mf, "columns", ()):
            own = own.fillna(pd.to_numeric(mf[quality].reindex(ids), errors="coerce"))
        return own

    n = known([task], "n_instances", "NumberOfInstances").iloc[0]
    if not np.isfinite(n):
        return []
    blind = d.index[d["fingerprint"].isna() & (d.index != task)]
    size = known(blind, "n_instances", "NumberOfInstances")
    out = size.between(0.9 * n, 2.0 * n)
    for column, quality, slack in (("n_classes", "NumberOfClasses", 0), ("n_features", "NumberOfFeatures", 2)):
        mine = known([task], column, quality).iloc[0]
        if np.isfinite(mine):
            theirs = known(blind, column, quality)
            out &= theirs.isna() | ((theirs - mine).abs() <= slack)
    return sorted(out.index[out.to_numpy()])


def knowledge_of(name: str, past: PastRuns, sources: Mapping[str, str] | None) -> tuple[str, PastRuns]:
    """``name`` without its ``knowledge=`` option, and ``past`` limited to the tasks of the
    ``+``-separated sources it names (``sources``: task -> source)."""
    parts = name.split("@")
    keep = [p for p in parts[1:] if not p.startswith("knowledge=")]
    chosen = [p.partition("=")[2] for p in parts[1:] if p.startswith("knowledge=")]
    if not chosen:
        return name, past
    if sources is None:
        raise InputDataError(f"method {name!r} names knowledge sources, but the tasks' sources are not known")
    wanted = set(chosen[-1].split("+"))
    tasks = [t for t in past.tasks if sources.get(t) in wanted]
    if not tasks:
        raise InputDataError(f"method {name!r}: no past task of the sources {sorted(wanted)}")
    return "@".join([parts[0], *keep]), past.only(tasks=tasks)


def measured_protocols(measured: str) -> list[str]:
    """The ``runs.protocol`` labels of the ``measured=`` option: ``kb``, the earlier hold-out
    knowledge base's (60/20/20, at most 2,000 training rows); ``tune``, those ``metabo tune``
    measures by (5-fold CV of the 80% not kept for test, or the 60/20/20 hold-out)."""
    from metabo.evaluation.protocols import Holdout, protocol_label, search_protocol

    if measured == "kb":
        return [protocol_label(Holdout(max_train=2000))]
    if measured == "tune":
        return [protocol_label(search_protocol("auto", n)) for n in (1, 10**9)]
    raise InputDataError(f"measured={measured!r}: use kb or tune")


def measured_of(name: str) -> tuple[str, str | None]:
    """``name`` without its ``measured=`` option, and the option's value (None: absent):
    the method transfers from the runs measured that way only (:func:`measured_protocols`),
    so that knowledge measured two ways can be compared in one run."""
    parts = name.split("@")
    chosen = [p.partition("=")[2] for p in parts[1:] if p.startswith("measured=")]
    keep = [p for p in parts[1:] if not p.startswith("measured=")]
    return "@".join([parts[0], *keep]), (chosen[-1] if chosen else None)


def space_of(name: str, space: CASHSpace) -> tuple[str, CASHSpace]:
    """``name`` without its ``space=`` option, and the space it names: ``base`` for the
    algorithms of Table 5.1 and DESIGN.md without those added for OBOE's grid (the space
    before them), or ``+``-separated algorithm names; ``space`` itself without the option."""
    from metabo.space.algorithms import default_cash_space, extra, table51

    parts = name.split("@")
    chosen = [p.partition("=")[2] for p in parts[1:] if p.startswith("space=")]
    if not chosen:
        return name, space
    keep = [p for p in parts[1:] if not p.startswith("space=")]
    names = ([s.name for s in (*table51.SPECS, *extra.SPECS)] if chosen[-1] == "base"
             else chosen[-1].split("+"))
    return "@".join([parts[0], *keep]), default_cash_space(names)


def make_method(name: str, past: PastRuns, meta: Mapping[str, float], seed: int, bank: Any, task: str,
                drop: Sequence[str], sources: Mapping[str, str] | None = None) -> Any:
    """The strategy of ``name`` for a held-out task (``past`` already excludes it; ``bank``
    the surrogate bank of every task, ``drop`` the tasks to remove from it; ``sources``
    task -> source, for the ``knowledge=`` option and ``oboe``)."""
    from metabo.strategies import GPBO, RandomSearch

    name, past = knowledge_of(name, past, sources)
    if name == "oboe" or name.startswith("oboe@"):
        from metabo.strategies.matrix_completion import OBOESelection

        own = [t for t in past.tasks if sources is not None and sources.get(t) == "oboe"]
        if not own:
            raise InputDataError(
                "the oboe method needs the OBOE meta-dataset in the knowledge base (metabo ingest oboe)")
        return OBOESelection(past.only(tasks=own), **method_options(name))

    if name == "random":
        return RandomSearch()
    if name == "gp":
        return GPBO(seed=seed)
    if name == "optuna-tpe":
        return OptunaTPE(seed=seed)
    if name == "knn":
        from metabo.strategies.knn import KNNWarmStart

        return KNNWarmStart(past, meta, k=5, then=GPBO(n_init=0, seed=seed), seed=seed)
    if name == "warm" or name.startswith("warm@"):
        from benchmarks.warm_variants import warm_start

        options = method_options(name)
        if isinstance(options.get("then"), str):  # a search phase by method name (rgpe, rlgp, ...)
            options["then"] = make_method(options["then"], past, meta, seed, bank, task, drop, sources)
        return warm_start(past, meta, seed=seed, **options)
    if name.split("@")[0] in BANK_METHODS:
        from metabo.strategies.rgpe import RGPE
        from metabo.strategies.rlgp import RLGP

        sub, base, options = bank.without(list(drop)), name.split("@")[0], method_options(name)
        if base == "rgpe":
            return RGPE(sub, seed=seed, **options)
        return RLGP(sub, seed=seed, one_per_algorithm=base == "rlgp-opa", **options)
    if name == "scot":
        from benchmarks.transfer_methods import SCOT_SETTINGS
        from metabo.strategies.scot import SCoT

        return SCoT(past, meta, **SCOT_SETTINGS, seed=seed)
    raise InputDataError(f"unknown method {name!r}; use one of {', '.join(METHODS)}")


def method_options(name: str) -> dict[str, Any]:
    """The keyword arguments of a method variant ``base@key=value@...`` (values parsed as
    JSON when they parse, ``true``/``false`` as booleans): ``warm@distinct=false`` is
    :class:`~metabo.strategies.portfolio.PortfolioWarmStart` with ``distinct=False``, and an
    ablation option (``warm@prior_mean=true``) makes it
    :class:`~benchmarks.warm_variants.PortfolioVariant` (:func:`~benchmarks.warm_variants.warm_start`)."""
    out: dict[str, Any] = {}
    for part in name.split("@")[1:]:
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise InputDataError(f"method variant {name!r}: options are key=value, got {part!r}")
        try:
            out[key] = json.loads(value)
        except json.JSONDecodeError:
            out[key] = value
    return out


def meta_of(past: PastRuns, task: str) -> dict[str, float]:
    mf = past.meta_features
    return {} if task not in mf.index else {k: float(v) for k, v in mf.loc[task].items() if np.isfinite(v)}


# ----------------------------------------------------------------- one surrogate run
def surrogate_run(method: str, task: str, seed: int, iterations: int, past_all: PastRuns, shared: Mapping[str, Any]
                  ) -> dict[str, Any]:
    """``method`` tunes held-out ``task``'s surrogate objective for ``iterations`` trials."""
    from benchmarks.loop import play
    from benchmarks.surrogate_task import SurrogateTask

    cache = shared.setdefault("_tasks", {})
    if task not in cache:
        cache.clear()  # one task at a time per worker (jobs are ordered by task)
        cache[task] = SurrogateTask.from_past(past_all, task, shared["space"], seed=0)
    objective = cache[task]
    drop = [task, *shared["same_content"].get(task, ())]
    past = past_all.without(drop)
    if method == "oracle":
        strategy: Any = RecordedOrder(past_all, task)
    else:
        strategy = make_method(method, past, meta_of(past_all, task), seed, shared.get("bank"), task, drop,
                               shared.get("sources"))
    played = play(objective.space, strategy, objective, iterations, seed=seed)
    return {"protocol": "surrogate", "method": method, "task": task, "seed": seed, "values": played.values,
            "regret": objective.regret(played.values).tolist(), "seconds": played.seconds,
            "algorithms": played.algorithms}


# ----------------------------------------------------------------- report
def live_ranges(runs: Sequence[Mapping[str, Any]], recorded: Mapping[str, tuple[float, float]]
                ) -> tuple[dict[str, float], dict[str, float]]:
    """Per task, the least and largest finite validation error of ``runs`` and of its
    ``recorded`` (least, largest) values: the live protocol's normalization."""
    lo: dict[str, float] = {}
    hi: dict[str, float] = {}
    for r in runs:
        v = [x for x in r["values"] if x is not None and math.isfinite(x)]
        if v:
            lo[r["task"]] = min(lo.get(r["task"], math.inf), min(v))
            hi[r["task"]] = max(hi.get(r["task"], -math.inf), max(v))
    for t, (a, b) in recorded.items():
        lo[t], hi[t] = min(lo.get(t, math.inf), a), max(hi.get(t, -math.inf), b)
    return lo, hi


def live_regret(runs: list[dict[str, Any]], recorded: Mapping[str, tuple[float, float]]) -> None:
    """Add ``regret`` to live runs: best-so-far validation error normalized per task by the
    least and largest error seen on it (every run of every method, and its recorded runs:
    :func:`live_ranges`)."""
    lo, hi = live_ranges(runs, recorded)
    for r in runs:
        v = np.array([x if x is not None and math.isfinite(x) else np.nan for x in r["values"]], dtype=float)
        best = np.fmin.accumulate(np.where(np.isfinite(v), v, hi[r["task"]]))
        span = hi[r["task"]] - lo[r["task"]]
        r["regret"] = (np.zeros(len(best)) if span <= 0 else (best - lo[r["task"]]) / span).tolist()


def report(runs: Sequence[Mapping[str, Any]], methods: Sequence[str], iterations: int, out: Path, title: str,
           references: Sequence[str] = ("gp", "knn")) -> tuple[dict[str, Any], str]:
    """The figures of the module docstring for ``runs`` of one protocol, the Wilcoxon tests
    against each of ``references`` that ran; writes the plot."""
    from benchmarks.compare import regret_table

    methods = [m for m in methods if any(r["method"] == m for r in runs)]
    tasks, R = regret_table(runs, methods, iterations)
    if not tasks:
        raise InputDataError("no task has runs of every method yet")
    refs = [m for m in references if m in methods]
    summary = summarize(R, methods, references=refs)
    text = format_table(summary, methods, title)
    # Wilcoxon over runs (task x seed) present for every method
    keyed: dict[tuple[str, str, int], list[float]] = {(r["method"], r["task"], r["seed"]): r["regret"] for r in runs}
    pairs = sorted({(t, s) for (_, t, s) in keyed if t in tasks and all((m, t, s) in keyed for m in methods)})
    at_runs: dict[str, dict[str, dict[str, float]]] = {}
    lines = [f"Wilcoxon p over {len(pairs)} runs (task x seed), two-sided; mean regret difference (method - ref)"]
    for ref in refs:
        lines.append(f"  vs {ref}: " + "".join(f"{'@' + str(k):>18s}" for k in REPORT_AT if k <= iterations))
        for m in methods:
            if m == ref:
                continue
            cells = []
            for k in (k for k in REPORT_AT if k <= iterations):
                a = np.array([_at(keyed[m, t, s], k) for t, s in pairs])
                b = np.array([_at(keyed[ref, t, s], k) for t, s in pairs])
                p = wilcoxon_p(a, b)
                at_runs.setdefault(m, {}).setdefault(f"vs_{ref}", {})[str(k)] = p
                cells.append(f"{p:>9.2g} ({float(np.mean(a - b)):+.3f})")
            lines.append(f"    {m:12s}" + "".join(cells))
    summary["wilcoxon_runs"] = at_runs
    summary["n_runs_paired"] = len(pairs)
    # when cold GP-BO first reaches each method's mean regret at 5
    reach: dict[str, int | None] = {}
    if "gp" in methods and iterations >= 5:
        for m in methods:
            reach[m] = first_reach(R, methods, "gp", m, 5, statistic=np.mean)["slow_iteration"]
        lines.append("Evaluation at which cold GP-BO's mean regret first reaches each method's mean regret at 5 "
                     f"(None: not within {iterations}): " + ", ".join(f"{m} {reach[m]}" for m in methods))
    summary["gp_reaches_regret_at_5"] = reach
    # distinct algorithms in the first 15, seconds per suggestion at 50 observations
    algs: dict[str, float] = {}
    secs: dict[str, float] = {}
    for m in methods:
        mine = [r for r in runs if r["method"] == m and r["task"] in tasks]
        n_alg = [len(set(r["algorithms"][:15])) for r in mine if r.get("algorithms")]
        algs[m] = float(np.mean(n_alg)) if n_alg else math.nan
        s50 = [r["seconds"][49] for r in mine if len(r.get("seconds") or []) >= 50]
        secs[m] = float(np.median(s50)) if s50 else math.nan
    summary["distinct_algorithms_in_15"] = algs
    summary["seconds_per_suggestion_at_50"] = secs
    lines.append("Distinct algorithms in the first 15 evaluations (mean over runs): "
                 + ", ".join(f"{m} {algs[m]:.2f}" for m in methods))
    lines.append("Median seconds per suggestion at 50 observations: "
                 + ", ".join(f"{m} {secs[m]:.3f}" for m in methods))
    tests = {m: [r["test_error"] for r in runs if r["method"] == m and r["task"] in tasks
                 and r.get("test_error") is not None] for m in methods}
    if any(tests.values()):
        summary["test_error"] = {m: float(np.mean(v)) if v else math.nan for m, v in tests.items()}
        lines.append("Mean test error of the selected configuration: "
                     + ", ".join(f"{m} {summary['test_error'][m]:.4f}" for m in methods))
    text += "\n".join(lines) + "\n"
    summary["tasks"] = tasks
    plot_curves(R, methods, out, title=title)
    return summary, text


def _at(curve: Sequence[float], k: int) -> float:
    return float(curve[min(k, len(curve)) - 1])


__all__ = ["BANK_METHODS", "METHODS", "OptunaTPE", "RecordedOrder", "held_out", "knowledge_of", "live_ranges",
           "measured_of", "measured_protocols",
           "live_regret", "make_method", "method_options", "possible_copies", "report", "same_content_groups",
           "space_of",
           "surrogate_run"]
