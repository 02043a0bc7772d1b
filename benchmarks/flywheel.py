"""The flywheel benchmark (scripts/bench_flywheel.py): does the store get better with use?

Notation: a base knowledge base ``K`` (the shipped one by default), new tasks
``t_1..t_n`` in a seeded order (none of them in ``K``), a budget of ``B`` trials and
seeds ``s``. Two arms tune every task with ``metabo tune``'s defaults (``strategy="auto"``,
trials scored by tune's protocol on the splits of seed ``s``):

- ``shipped``: ``t_i`` warm-started from ``K`` alone (a fresh copy of ``K`` per task, so
  nothing one task records reaches another);
- ``flywheel``: ``t_1..t_n`` tuned one after another into one copy of ``K`` per seed, as a
  user does: ``t_i`` warm-starts from ``K`` plus the sessions of ``t_1..t_{i-1}``, which
  ``tune`` recorded into the store with their protocol (``runs.protocol``).

A task is *preceded by a similar one* when an earlier task of the sequence is of the same
family: the KEEL name before its variant suffix (``yeast-2_vs_4`` and ``yeast5`` are both
``yeast``: the same measurements relabelled, the closest kind of similarity a user's
stream of datasets has), :func:`family`.

Score: ``v_k`` the validation error of trial ``k`` (failures at the worst value seen),
``b_k = min_{i<=k} v_i``, normalized per (task, seed) by the least and largest value seen
on that task by either arm: regret ``(b_k - lo) / (hi - lo)``. Reported: mean regret at
1, 3, 5, 10, 25 per arm, over every task and over the tasks preceded by a similar one
(and the others), Wilcoxon over tasks (each task's regret averaged over seeds), the test
error of the selected configurations, and a plot.
"""

from __future__ import annotations

import json
import logging
import math
import re
import shutil
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.compare import wilcoxon_p
from metabo.exceptions import InputDataError

logger = logging.getLogger(__name__)

ARMS = ("shipped", "flywheel")
REPORT_AT = (1, 3, 5, 10, 25)


def family(name: str) -> str:
    """A KEEL dataset's family: its name before the variant (``ecoli-0-1_vs_5`` and
    ``ecoli3`` -> ``ecoli``; ``new-thyroid1`` -> ``new-thyroid``; ``kr-vs-k-zero_vs_eight``
    -> ``kr-vs-k``)."""
    base = name.split("/")[-1].split(":")[-1]
    base = re.split(r"-\d|_vs_|-(?:one|two|three|zero|c\d|normal|good|vgood|buffer|guess|land|rootkit|F$)",
                    base)[0]
    return base.rstrip("0123456789-") or base


def choose_tasks(names: Sequence[str], *, n: int, per_family: int = 2, seed: int = 0) -> list[str]:
    """``n`` names in a seeded order, ``per_family`` from each of ``n / per_family`` families
    drawn among those with at least ``per_family`` members, so that about half of the tasks
    are preceded by a similar one."""
    if n < 1 or per_family < 1:
        raise InputDataError("choose at least one task, at least one per family")
    groups: dict[str, list[str]] = {}
    for name in sorted(names):
        groups.setdefault(family(name), []).append(name)
    eligible = sorted(f for f, members in groups.items() if len(members) >= per_family)
    need = math.ceil(n / per_family)
    if len(eligible) < need:
        raise InputDataError(f"only {len(eligible)} families have {per_family} members; ask for fewer tasks")
    rng = np.random.default_rng(seed)
    chosen = [eligible[i] for i in rng.choice(len(eligible), need, replace=False)]
    picked = [m for f in chosen for m in (groups[f][i] for i in rng.choice(len(groups[f]), per_family,
                                                                           replace=False))]
    order = rng.permutation(len(picked))
    return [picked[i] for i in order][:n]


def similar_before(specs: Sequence[str]) -> list[bool]:
    """Per position, whether an earlier spec is of the same :func:`family`."""
    seen: set[str] = set()
    out = []
    for spec in specs:
        f = family(spec)
        out.append(f in seen)
        seen.add(f)
    return out


def _tune(spec: str, store: Path, *, budget: int, seed: int, session_id: str, time_limit: float) -> dict[str, Any]:
    """``metabo tune``'s defaults on ``spec`` into ``store``: the record of the session."""
    from metabo.kb import KnowledgeBase
    from metabo.tuning.tune import tune

    notes: list[str] = []
    start = time.perf_counter()
    with KnowledgeBase(store) as kb:
        result = tune(spec, kb=kb, budget=budget, seed=seed, session_id=session_id, time_limit=time_limit,
                      keep_predictions=False, on_strategy=lambda name, note, _: notes.append(f"{name}: {note}"))
    done = result.history.completed
    return {"values": [float(r.value) if r.ok else math.nan for r in done],
            "configs": [[r.algorithm, dict(r.params)] for r in done],
            "selected": [result.algorithm, result.params],
            "test_error": None if result.test_error is None else float(result.test_error),
            "strategy": notes[0] if notes else "", "seconds": time.perf_counter() - start}


def run_arm(arm: str, base_kb: Path, specs: Sequence[str], *, seed: int, budget: int, work: Path,
            done: set[tuple[str, int, int]], time_limit: float = 30.0) -> Iterable[dict[str, Any]]:
    """Yield the record of each (``arm``, ``seed``, position) not in ``done``, in order.

    ``flywheel`` keeps its store ``work/flywheel-s<seed>.duckdb`` across tasks (and across
    a resumed run: a task's session id is fixed, so a killed one continues); ``shipped``
    tunes each task in a throw-away copy of ``base_kb``."""
    if arm not in ARMS:
        raise InputDataError(f"unknown arm {arm!r}; use one of {ARMS}")
    work.mkdir(parents=True, exist_ok=True)
    fly = work / f"flywheel-s{seed}.duckdb"
    if arm == "flywheel" and not fly.exists():
        shutil.copyfile(base_kb, fly)
    before = similar_before(specs)
    for i, spec in enumerate(specs):
        if (arm, seed, i) in done:
            continue
        session = f"{arm}-s{seed}-{i:02d}"
        if arm == "flywheel":
            record = _tune(spec, fly, budget=budget, seed=seed, session_id=session, time_limit=time_limit)
        else:
            with tempfile.TemporaryDirectory(dir=work) as tmp:
                store = Path(tmp) / "kb.duckdb"
                shutil.copyfile(base_kb, store)
                record = _tune(spec, store, budget=budget, seed=seed, session_id=session, time_limit=time_limit)
        yield {"arm": arm, "seed": seed, "position": i, "spec": spec, "family": family(spec),
               "similar_before": before[i], **record}


# ----------------------------------------------------------------- report
def add_regret(records: list[dict[str, Any]]) -> None:
    """Add ``regret`` to each record: best so far, normalized per (spec, seed) by the
    least and largest value either arm saw (module docstring)."""
    span: dict[tuple[str, int], tuple[float, float]] = {}
    for r in records:
        v = [x for x in r["values"] if x is not None and math.isfinite(x)]
        if v:
            lo, hi = span.get((r["spec"], r["seed"]), (math.inf, -math.inf))
            span[r["spec"], r["seed"]] = (min(lo, min(v)), max(hi, max(v)))
    for r in records:
        lo, hi = span.get((r["spec"], r["seed"]), (0.0, 0.0))
        v = np.array([x if x is not None and math.isfinite(x) else hi for x in r["values"]], dtype=float)
        best = np.minimum.accumulate(v) if len(v) else v
        r["regret"] = (np.zeros(len(best)) if hi <= lo else (best - lo) / (hi - lo)).tolist()


def _by_task(records: Sequence[Mapping[str, Any]], arm: str, k: int, specs: Sequence[str]) -> np.ndarray:
    """Each spec's regret after ``k`` trials for ``arm``, averaged over seeds."""
    out = []
    for spec in specs:
        vals = [r["regret"][min(k, len(r["regret"])) - 1] for r in records
                if r["arm"] == arm and r["spec"] == spec and r["regret"]]
        out.append(float(np.mean(vals)) if vals else math.nan)
    return np.array(out)


def summarize(records: list[dict[str, Any]], budget: int) -> tuple[dict[str, Any], str]:
    """The figures of the module docstring over the specs both arms finished."""
    add_regret(records)
    have = {(r["arm"], r["spec"], r["seed"]) for r in records}
    specs = sorted({r["spec"] for r in records
                    if all((a, r["spec"], r["seed"]) in have for a in ARMS)})
    similar = {r["spec"]: bool(r["similar_before"]) for r in records if r["arm"] == "flywheel"}
    groups = {"all tasks": specs, "preceded by a similar task": [s for s in specs if similar.get(s)],
              "not preceded by a similar task": [s for s in specs if not similar.get(s)]}
    at = [k for k in REPORT_AT if k <= budget]
    summary: dict[str, Any] = {"tasks": specs, "groups": {}}
    lines = []
    for label, members in groups.items():
        if not members:
            continue
        rows = {}
        for k in at:
            a, b = _by_task(records, "shipped", k, members), _by_task(records, "flywheel", k, members)
            rows[k] = {"shipped": float(np.nanmean(a)), "flywheel": float(np.nanmean(b)),
                       "p": wilcoxon_p(a, b), "flywheel_better": int(np.sum(b < a)),
                       "flywheel_worse": int(np.sum(b > a))}
        test = {arm: float(np.mean([r["test_error"] for r in records if r["arm"] == arm and r["spec"] in members
                                    and r["test_error"] is not None] or [math.nan])) for arm in ARMS}
        summary["groups"][label] = {"n": len(members), "at": rows, "test_error": test}
        lines.append(f"{label} ({len(members)} tasks):")
        lines.append("  mean normalized regret " + "  ".join(f"@{k}" for k in at))
        for arm in ARMS:
            lines.append(f"  {arm:<9} " + "  ".join(f"{rows[k][arm]:.3f}" for k in at)
                         + f"   test error {test[arm]:.4f}")
        lines.append("  Wilcoxon p  " + "  ".join(f"{rows[k]['p']:.3f}" for k in at))
        lines.append("  flywheel better/worse (tasks) " + "  ".join(
            f"{rows[k]['flywheel_better']}/{rows[k]['flywheel_worse']}" for k in at))
        lines.append("")
    return summary, "\n".join(lines)


def plot(records: Sequence[Mapping[str, Any]], budget: int, path: Path) -> None:
    """Mean regret against the trial, per arm, for all tasks and those preceded by a similar one."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, similar, title in ((axes[0], None, "all tasks"), (axes[1], True, "preceded by a similar task")):
        for arm in ARMS:
            curves = [r["regret"][:budget] + [r["regret"][-1]] * (budget - len(r["regret"]))
                      for r in records if r["arm"] == arm and r["regret"]
                      and (similar is None or r["similar_before"] == similar)]
            if curves:
                ax.plot(np.arange(1, budget + 1), np.mean(curves, axis=0), label=arm)
        ax.set_title(title)
        ax.set_xlabel("trial")
        ax.set_yscale("symlog", linthresh=0.01)
    axes[0].set_ylabel("mean normalized regret")
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


class _Given:
    """A strategy that asks one given configuration (the incumbent check)."""

    name = "given"

    def __init__(self, config: tuple[str, dict[str, Any]]) -> None:
        self.config = config

    def suggest(self, history: Any, space: Any, rng: Any) -> tuple[str, dict[str, Any]]:
        return self.config


def predecessor_incumbents(records: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """For every ``flywheel`` record preceded by a similar task: the latest earlier task
    of its family and that task's best configuration in the ``flywheel`` arm (what a
    user would carry over by hand)."""
    fly = sorted((r for r in records if r["arm"] == "flywheel"), key=lambda r: (r["seed"], r["position"]))
    out = []
    for r in fly:
        if not r["similar_before"]:
            continue
        before = [q for q in fly if q["seed"] == r["seed"] and q["position"] < r["position"]
                  and q["family"] == r["family"] and any(v is not None and math.isfinite(v) for v in q["values"])]
        if not before:
            continue
        q = before[-1]
        best = int(np.nanargmin([v if v is not None and math.isfinite(v) else np.nan for v in q["values"]]))
        out.append({"spec": r["spec"], "seed": r["seed"], "from": q["spec"], "config": q["configs"][best]})
    return out


def incumbent_check(records: list[dict[str, Any]], base_kb: Path, work: Path, *,
                    time_limit: float = 30.0) -> tuple[list[dict[str, Any]], str]:
    """Is a similar earlier task's best configuration good on the later one? Each of
    :func:`predecessor_incumbents` evaluated on its task as ``tune`` scores a trial (the
    same seed's splits), its regret normalized like the arms' (:func:`add_regret`, the
    range widened to include it), against the ``shipped`` arm's regret after 1 and 5
    trials. Returns the rows and a printable table."""
    from metabo.kb import KnowledgeBase
    from metabo.tuning.tune import tune

    shipped = {(r["spec"], r["seed"]): r for r in records if r["arm"] == "shipped"}
    rows = []
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        store = Path(tmp) / "kb.duckdb"
        shutil.copyfile(base_kb, store)
        for item in predecessor_incumbents(records):
            base = shipped.get((item["spec"], item["seed"]))
            if base is None:
                continue
            with KnowledgeBase(store) as kb:
                result = tune(item["spec"], kb=kb, budget=1, seed=item["seed"], strategy=_Given(tuple(item["config"])),
                              time_limit=time_limit, keep_predictions=False,
                              session_id=f"incumbent-s{item['seed']}-{family(item['spec'])}-{len(rows)}")
            trial = result.history.completed[0]
            value = float(trial.value) if trial.ok else math.nan
            seen = [v for r in records if r["spec"] == item["spec"] and r["seed"] == item["seed"]
                    for v in r["values"] if v is not None and math.isfinite(v)]
            if math.isfinite(value):
                seen.append(value)
            lo, hi = min(seen), max(seen)
            v = np.array([x if x is not None and math.isfinite(x) else hi for x in base["values"]])
            best = np.minimum.accumulate(v)

            def regret(x: float, lo: float = lo, hi: float = hi) -> float:
                return 0.0 if hi <= lo else (x - lo) / (hi - lo)

            rows.append({**item, "value": value, "regret": regret(value if math.isfinite(value) else hi),
                         "shipped_at_1": regret(best[0]), "shipped_at_5": regret(best[min(4, len(best) - 1)])})
    lines = [f"{'task':30s} {'earlier task of its family':30s} {'algorithm':22s} incumbent  shipped@1  shipped@5"]
    for r in rows:
        lines.append(f"{r['spec'].split('/')[-1]:30s} {r['from'].split('/')[-1]:30s} {r['config'][0]:22s} "
                     f"{r['regret']:9.3f}  {r['shipped_at_1']:9.3f}  {r['shipped_at_5']:9.3f}")
    if rows:
        a = np.array([[r["regret"], r["shipped_at_1"], r["shipped_at_5"]] for r in rows])
        lines.append(f"{'mean':84s}{a[:, 0].mean():9.3f}  {a[:, 1].mean():9.3f}  {a[:, 2].mean():9.3f}")
        lines.append(f"incumbent better than the shipped first pick on {int((a[:, 0] < a[:, 1]).sum())}, worse on "
                     f"{int((a[:, 0] > a[:, 1]).sum())} of {len(rows)} tasks; Wilcoxon p "
                     f"{wilcoxon_p(a[:, 0], a[:, 1]):.3g}")
    return rows, "\n".join(lines)


def load_records(path: Path) -> list[dict[str, Any]]:
    """The records of a runs file (one JSON object per line; none when absent)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


__all__ = ["ARMS", "add_regret", "choose_tasks", "family", "incumbent_check", "load_records", "plot",
           "predecessor_incumbents", "run_arm", "similar_before", "summarize"]
