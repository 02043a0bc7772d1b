"""RLGP's seconds per suggestion with the whole knowledge base, the one-time cost of the
surrogate bank, and OpenBox's RGPE advisor beside it in the same run.

1. The bank: fit on every task of the knowledge base but one (the target), timed; then
   the same fit against the store's cache (``surrogate_bank`` table), timed.
2. RLGP over the full CASH space (every algorithm with runs), the target's values given by
   the held-out task's own bank GPs (a surrogate benchmark: configurations anywhere in the
   space have a value): after ``n`` random observations (10, 50), the median seconds of 5
   suggestions (after one untimed, so caches are warm as in a run; each suggestion's
   outcome is told before the next, so the target GP of the algorithm picked is extended
   and refitted as in a run). Medians, because the machine may be shared. Then the same
   with the acquisition searched jointly over the CASH space (``RLGP(search="joint")``).
3. With ``--pmf-kb``: the same on PMF's meta-dataset (Fusi et al. 2018; 553 tasks, 8
   ``pmf:estimator-<b>`` algorithms), the RLGP paper's own knowledge base: at most 50 random
   pipelines per (task, algorithm) (seeded, chosen in SQL: the store holds 16.7M runs), the
   CASH space inferred from every recorded PMF configuration
   (:class:`metabo.metadatasets.inferred_space.InferredSpace`: the list-valued pipeline vectors as Float
   coordinates), the bank on every task but one timed (fit, cached load), RLGP at 10 and 50.
4. OpenBox's RGPE (``tlbo_rgpe_gp``) on one algorithm (``--openbox-algorithm``, svm_rbf by
   default) with 5 source tasks of 50 observations each (the 5 nearest by meta-features),
   target observations the held-out task's recorded runs, timed by
   ``scripts/openbox_rgpe_timing.py`` (median of 5) under ``--openbox-python`` (OpenBox
   pins old numpy/ConfigSpace: keep it in its own environment, e.g.
   ``python -m venv .venv-openbox && .venv-openbox/bin/pip install openbox``).

Writes ``rlgp_speed.json`` and ``rlgp_speed.txt`` (the lines printed) under ``--out``.

With several ``--kb`` each store is measured in turn, in one run (for instance the
shipped 42 tasks and the same with OBOE's 418 ingested), with the default warm start
(:class:`~metabo.strategies.portfolio.PortfolioWarmStart`) timed beside RLGP; every
error rate is read (OBOE's tasks recorded ``ovr_balanced_error_rate``).

Usage (one BLAS thread for every method):
    OMP_NUM_THREADS=1 python scripts/bench_rlgp_speed.py [--kb PATH ...] [--pmf-kb PATH]
        [--openbox-python PATH] [--out reports/transfer]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import _repo  # noqa: F401 - first: the repository's root on sys.path, for benchmarks/ (not installed)
import numpy as np

from metabo.kb import KnowledgeBase
from metabo.kb.past import PastRuns
from metabo.kb.queries import nearest_from_matrix
from metabo.optimizer import Optimizer
from metabo.space.algorithms import default_cash_space
from metabo.strategies.rlgp import RLGP
from metabo.surrogates.bank import SurrogateBank, space_encoder

N_OBS = (10, 50)
REPEATS = 5
LINES: list[str] = []  # the report's text

#: PMF runs: per (task, algorithm) the mean value of at most ``k`` configurations, chosen
#: by a seeded hash of their ids (a random subset, the same in every run).
PMF_QUERY = (
    "WITH per AS (SELECT dataset_id, algorithm, config_id, avg(value) AS value FROM runs "
    "WHERE source = 'pmf' AND metric = ? AND status = 'ok' AND value IS NOT NULL AND isfinite(value) "
    "GROUP BY ALL), "
    "pick AS (SELECT *, row_number() OVER (PARTITION BY dataset_id, algorithm "
    "ORDER BY hash(config_id || ?), config_id) AS k FROM per) "
    "SELECT p.dataset_id, p.algorithm, p.config_id, p.value, c.params "
    "FROM pick p JOIN configurations c USING (config_id) WHERE k <= ? ORDER BY ALL"
)


def _say(message: str) -> None:
    print(message, flush=True)
    LINES.append(message)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kb", action="append", help="a store (repeat: each is measured, in this run; default: the "
                   "shipped knowledge base in a temporary store)")
    p.add_argument("--openbox-python", help="a Python with openbox installed")
    p.add_argument("--openbox-algorithm", default="svm_rbf")
    p.add_argument("--pmf-kb", help="a store with PMF's runs (source 'pmf'), opened read-only")
    p.add_argument("--pmf-metric", default="balanced_error_rate")
    p.add_argument("--pmf-max-points", type=int, default=50, help="random pipelines per (task, algorithm)")
    p.add_argument("--pmf-tasks", type=int, help="only this many PMF tasks (a quick check; default: all)")
    p.add_argument("--out", type=Path, default=Path("reports/transfer"))
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    from benchmarks.transfer_methods import shipped_kb_file

    report: dict[str, object] = {"load_average_at_start": os.getloadavg(),
                                 "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), "stores": {}}
    for kb_path in args.kb or [shipped_kb_file(None)]:
        past, target, space, rlgp_seconds, rlgp_cpu = _store(kb_path, report)
    report.update(kb=kb_path, target=target)  # the last store's, for OpenBox and PMF below

    if args.openbox_python:
        openbox, openbox_cpu = _openbox(args, past, target, space)
        report["openbox_rgpe_seconds_per_suggestion"] = openbox
        report["openbox_rgpe_cpu_seconds_per_suggestion"] = openbox_cpu
        report["openbox_over_rlgp"] = {n: s / rlgp_seconds[n] for n, s in openbox.items()}
        report["openbox_over_rlgp_cpu"] = {n: s / rlgp_cpu[n] for n, s in openbox_cpu.items()}
        for n, s in openbox.items():
            _say(f"OpenBox RGPE ({args.openbox_algorithm}, 5 source tasks), {n} target observations: {s:.3f} s "
                 f"per suggestion (CPU {openbox_cpu[n]:.3f} s); RLGP with {len(past.tasks) - 1} tasks is "
                 f"{s / rlgp_seconds[n]:.1f}x faster (CPU: {openbox_cpu[n] / rlgp_cpu[n]:.1f}x)")
    if args.pmf_kb:
        report["pmf"] = _pmf(args)
    report["load_average_at_end"] = os.getloadavg()
    (args.out / "rlgp_speed.json").write_text(json.dumps(report, indent=1))
    (args.out / "rlgp_speed.txt").write_text("\n".join(LINES) + "\n")
    print(f"wrote {args.out / 'rlgp_speed.json'} and rlgp_speed.txt")
    return 0


def _store(kb_path: str, report: dict) -> tuple:  # type: ignore[type-arg]
    """The default warm start's and RLGP's seconds per suggestion with the tasks of
    ``kb_path`` (every error rate: OBOE's tasks count), the bank's fit and cached load."""
    from metabo.evaluation.metrics import transfer_metrics
    from metabo.strategies.portfolio import PortfolioWarmStart

    with KnowledgeBase(kb_path, read_only=True) as kb:
        past = PastRuns.from_kb(kb, also=transfer_metrics("error_rate")[1:])
        target = PastRuns.from_kb(kb).tasks[0]  # a task with error_rate runs (a KEEL one)
    space = default_cash_space([a for a in default_cash_space().algorithms if a in past.algorithms])
    sources = past.without(target)
    mine: dict[str, object] = {"target": target, "n_source_tasks": len(sources.tasks),
                               "algorithms": list(space.algorithms)}
    report["stores"][kb_path] = mine  # type: ignore[index]
    _say(f"{kb_path}: {len(sources.tasks)} source tasks, {len(space.algorithms)} algorithms, target {target}")
    mf = past.meta_features
    meta = {} if target not in mf.index else {k: float(v) for k, v in mf.loc[target].items() if np.isfinite(v)}
    warm_cpu: dict[str, float] = {}
    mine["warm_seconds_per_suggestion"] = _timed(
        space, lambda: PortfolioWarmStart(sources, meta, seed=0), past.only(tasks=[target]),
        f"default warm start, {len(sources.tasks)} tasks", warm_cpu)
    mine["warm_cpu_seconds_per_suggestion"] = warm_cpu
    bank = _bank_timed(sources, space, mine)
    _say(f"bank: {mine['bank_gps']} GPs over {len(bank.tasks)} tasks fitted in {mine['bank_fit_seconds']:.1f} s; "
         f"loaded from the store's cache in {mine['bank_cached_seconds']:.2f} s")
    rlgp_cpu: dict[str, float] = {}
    rlgp_seconds = _rlgp_timed(space, bank, past.only(tasks=[target]),
                               f"RLGP, {len(bank.tasks)} tasks x {len(space.algorithms)} algorithms", rlgp_cpu)
    mine["rlgp_seconds_per_suggestion"] = rlgp_seconds
    mine["rlgp_cpu_seconds_per_suggestion"] = rlgp_cpu
    joint_cpu: dict[str, float] = {}
    mine["rlgp_joint_seconds_per_suggestion"] = _rlgp_timed(
        space, bank, past.only(tasks=[target]),
        f"RLGP, joint acquisition search, {len(bank.tasks)} tasks x {len(space.algorithms)} algorithms", joint_cpu,
        search="joint")
    mine["rlgp_joint_cpu_seconds_per_suggestion"] = joint_cpu
    return past, target, space, rlgp_seconds, rlgp_cpu


def _bank_timed(sources: PastRuns, space, report: dict) -> SurrogateBank:  # type: ignore[no-untyped-def]
    """The bank on ``sources`` fitted into a fresh store's cache, then loaded from it, timed."""
    with tempfile.TemporaryDirectory() as tmp:
        with KnowledgeBase(Path(tmp) / "cache.duckdb") as cache:
            start = time.perf_counter()
            bank = SurrogateBank.fit(sources, space_encoder(space), kb=cache)
            report["bank_fit_seconds"] = time.perf_counter() - start
            start = time.perf_counter()
            again = SurrogateBank.fit(sources, space_encoder(space), kb=cache)
            report["bank_cached_seconds"] = time.perf_counter() - start
            report["bank_gps"] = len(bank.members_)
            assert again.n_fitted_ == 0
    return bank


def _rlgp_timed(space, bank: SurrogateBank, target: PastRuns, label: str,  # type: ignore[no-untyped-def]
                cpu_seconds: dict[str, float], search: str = "algorithm") -> dict[str, float]:
    """RLGP's seconds per suggestion (:func:`_timed`), with its acquisition searched per
    algorithm (the default) or jointly over the CASH space."""
    return _timed(space, lambda: RLGP(bank, n_init=0, seed=0, search=search), target, label, cpu_seconds)


def _timed(space, make, target: PastRuns, label: str,  # type: ignore[no-untyped-def]
           cpu_seconds: dict[str, float]) -> dict[str, float]:
    """The median wall seconds per suggestion of the strategy ``make()`` after ``n`` random
    observations of the target (values from the target's own bank GPs; an algorithm the
    target never ran, as OBOE's additions, scores the target's worst recorded value), for
    each ``n`` in :data:`N_OBS`; the median CPU seconds of this process into
    ``cpu_seconds`` (less sensitive to other jobs on a shared machine, with one BLAS thread)."""
    truth = SurrogateBank.fit(target, space_encoder(space))
    worst = max(float(v.max()) for (_, _), g in target.groups.items() for v in [g.values])

    def objective(algorithm: str, params: dict) -> float:
        if algorithm not in truth.algorithms:
            return worst
        x = space[algorithm].encode(params)[None, :]
        return float(truth.predict(algorithm, x)[0][0, 0])

    out: dict[str, float] = {}
    for n in N_OBS:
        opt = _fed_optimizer(space, make(), objective, n, seed=n)
        opt.ask()  # untimed: caches warm
        times, cpu = [], []
        for _ in range(REPEATS):
            start, start_cpu = time.perf_counter(), time.process_time()
            trial = opt.ask()
            times.append(time.perf_counter() - start)
            cpu.append(time.process_time() - start_cpu)
            opt.tell(trial, objective(trial.algorithm, trial.params))
        out[str(n)] = float(np.median(times))
        cpu_seconds[str(n)] = float(np.median(cpu))
        _say(f"{label}, {n} target observations: {out[str(n)]:.3f} s per suggestion (median of {REPEATS}; "
             f"min {min(times):.3f}, max {max(times):.3f}; CPU {cpu_seconds[str(n)]:.3f} s)")
    return out


def _pmf(args: argparse.Namespace) -> dict[str, object]:
    """PMF's knowledge base (module docstring, 3.)."""
    from metabo.metadatasets.inferred_space import InferredSpace

    start = time.perf_counter()
    with KnowledgeBase(args.pmf_kb, read_only=True) as kb:
        frame = kb.query(PMF_QUERY, [args.pmf_metric, ":seed0", args.pmf_max_points])
        configs = kb.query("SELECT algorithm, params FROM configurations WHERE algorithm LIKE 'pmf:%'")
    inferred = InferredSpace.from_configurations(
        (a, json.loads(p) if isinstance(p, str) else p) for a, p in zip(configs["algorithm"], configs["params"]))
    past = inferred.flatten_past(PastRuns.from_frame(frame, metric=args.pmf_metric))
    if args.pmf_tasks:
        past = past.only(tasks=past.tasks[: args.pmf_tasks])
    space = inferred.space
    target = past.tasks[0]
    sources = past.without(target)
    report: dict[str, object] = {
        "kb": args.pmf_kb, "metric": args.pmf_metric, "max_points": args.pmf_max_points,
        "runs": int(sum(len(g.values) for g in past.groups.values())), "load_seconds": time.perf_counter() - start,
        "space": repr(inferred), "algorithms": list(space.algorithms), "target": target,
        "n_source_tasks": len(sources.tasks)}
    _say(f"PMF: {report['runs']} runs ({len(past.tasks)} tasks, {len(space.algorithms)} algorithms) loaded in "
         f"{report['load_seconds']:.1f} s; {inferred!r}")
    bank = _bank_timed(sources, space, report)
    _say(f"PMF bank: {report['bank_gps']} GPs over {len(bank.tasks)} tasks fitted in "
         f"{report['bank_fit_seconds']:.1f} s; loaded from the store's cache in {report['bank_cached_seconds']:.2f} s")
    cpu: dict[str, float] = {}
    report["rlgp_seconds_per_suggestion"] = _rlgp_timed(
        space, bank, past.only(tasks=[target]),
        f"RLGP on PMF, {len(bank.tasks)} tasks x {len(space.algorithms)} algorithms", cpu)
    report["rlgp_cpu_seconds_per_suggestion"] = cpu
    return report


def _fed_optimizer(space, strategy, objective, n: int, seed: int) -> Optimizer:  # type: ignore[no-untyped-def]
    """An optimizer whose first ``n`` trials are uniform random, then ``strategy``."""
    from metabo.strategies import RandomSearch

    class Then:
        name = strategy.name

        def suggest(self, history, space_, rng):  # type: ignore[no-untyped-def]
            inner = RandomSearch() if len(history) < n else strategy
            return inner.suggest(history, space_, rng)

    opt = Optimizer(space, Then(), seed=seed)
    for _ in range(n):
        trial = opt.ask()
        opt.tell(trial, objective(trial.algorithm, trial.params))
    return opt


def _openbox(args: argparse.Namespace, past: PastRuns, target: str,  # type: ignore[no-untyped-def]
            space) -> tuple[dict[str, float], dict[str, float]]:
    """OpenBox's median wall and CPU seconds per suggestion (module docstring, 4.)."""
    algorithm = args.openbox_algorithm
    sub = space[algorithm]
    mf = past.meta_features
    near = nearest_from_matrix(mf.drop(index=[target]), mf.loc[target].to_dict(), k=5)["dataset_id"].tolist()
    hps = [{"name": h.name, "low": float(h.low), "high": float(h.high), "log": bool(h.log)}
           for h in sub.hyperparameters]

    def rows(task: str) -> list:
        g = past[(task, algorithm)]
        return [[[float(p[h["name"]]) for h in hps], float(v)] for p, v in zip(g.params, g.values)]

    spec = {"space": hps, "sources": [rows(t) for t in near], "target": rows(target),
            "n_observations": [n for n in N_OBS if n <= len(rows(target))], "repeats": REPEATS, "seed": 0}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f)
    script = Path(__file__).with_name("openbox_rgpe_timing.py")
    done = subprocess.run([args.openbox_python, str(script), f.name], capture_output=True, text=True, check=True)
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return ({k: float(v) for k, v in result["wall"].items()}, {k: float(v) for k, v in result["cpu"].items()})


if __name__ == "__main__":
    sys.exit(main())
