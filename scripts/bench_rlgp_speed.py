"""RLGP's seconds per suggestion with the whole knowledge base, the one-time cost of the
surrogate bank, and OpenBox's RGPE advisor beside it in the same run.

1. The bank: fit on every task of the knowledge base but one (the target), timed; then
   the same fit against the store's cache (``surrogate_bank`` table), timed.
2. RLGP over the full CASH space (every algorithm with runs), the target's values given by
   the held-out task's own bank GPs (a surrogate benchmark: configurations anywhere in the
   space have a value): after ``n`` random observations (10, 50), the mean seconds of 3
   suggestions (after one untimed, so caches are warm as in a run).
3. OpenBox's RGPE (``tlbo_rgpe_gp``) on one algorithm (``--openbox-algorithm``, svm_rbf by
   default) with 5 source tasks of 50 observations each (the 5 nearest by meta-features),
   target observations drawn the same way, timed by ``scripts/openbox_rgpe_timing.py``
   under ``--openbox-python`` (OpenBox pins old numpy/ConfigSpace: keep it in its own
   environment, e.g. ``python -m venv .venv-openbox && .venv-openbox/bin/pip install openbox``).

Usage:
    python scripts/bench_rlgp_speed.py [--kb PATH] [--openbox-python PATH] [--out reports/transfer]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from metabo.kb import KnowledgeBase
from metabo.kb.past import PastRuns
from metabo.kb.queries import nearest_from_matrix
from metabo.optimizer import Optimizer
from metabo.space.algorithms import default_cash_space
from metabo.strategies.rlgp import RLGP
from metabo.surrogates.bank import SurrogateBank, space_encoder

N_OBS = (10, 50)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--kb", default="/work/kbship/shipped.duckdb")
    p.add_argument("--openbox-python", help="a Python with openbox installed")
    p.add_argument("--openbox-algorithm", default="svm_rbf")
    p.add_argument("--out", type=Path, default=Path("reports/transfer"))
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    with KnowledgeBase(args.kb, read_only=True) as kb:
        past = PastRuns.from_kb(kb)
    space = default_cash_space([a for a in default_cash_space().algorithms if a in past.algorithms])
    target = past.tasks[0]
    sources = past.without(target)
    report: dict[str, object] = {"kb": args.kb, "target": target, "n_source_tasks": len(sources.tasks),
                                 "algorithms": list(space.algorithms)}

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
    print(f"bank: {report['bank_gps']} GPs over {len(bank.tasks)} tasks fitted in {report['bank_fit_seconds']:.1f} s; "
          f"loaded from the store's cache in {report['bank_cached_seconds']:.2f} s", flush=True)
    truth = SurrogateBank.fit(past.only(tasks=[target]), space_encoder(space))

    def objective(algorithm: str, params: dict) -> float:
        x = space[algorithm].encode(params)[None, :]
        return float(truth.predict(algorithm, x)[0][0, 0])

    rlgp_seconds = {}
    for n in N_OBS:
        strategy = RLGP(bank, n_init=0, seed=0)
        opt = _fed_optimizer(space, strategy, objective, n, seed=n)
        opt.ask()  # untimed: caches warm
        times = []
        for _ in range(3):
            start = time.perf_counter()
            trial = opt.ask()
            times.append(time.perf_counter() - start)
            opt.tell(trial, objective(trial.algorithm, trial.params))
        rlgp_seconds[str(n)] = float(np.mean(times))
        print(f"RLGP, {len(bank.tasks)} tasks x {len(space.algorithms)} algorithms, {n} target observations: "
              f"{rlgp_seconds[str(n)]:.3f} s per suggestion", flush=True)
    report["rlgp_seconds_per_suggestion"] = rlgp_seconds

    if args.openbox_python:
        report["openbox_rgpe_seconds_per_suggestion"] = _openbox(args, past, target, space)
        for n, s in report["openbox_rgpe_seconds_per_suggestion"].items():
            ratio = s / rlgp_seconds[n]
            print(f"OpenBox RGPE ({args.openbox_algorithm}, 5 source tasks), {n} target observations: {s:.3f} s "
                  f"per suggestion; RLGP is {ratio:.1f}x faster with {len(bank.tasks)} tasks", flush=True)
    (args.out / "rlgp_speed.json").write_text(json.dumps(report, indent=1))
    print(f"wrote {args.out / 'rlgp_speed.json'}")
    return 0


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


def _openbox(args: argparse.Namespace, past: PastRuns, target: str, space) -> dict[str, float]:  # type: ignore[no-untyped-def]
    algorithm = args.openbox_algorithm
    sub = space[algorithm]
    mf = past.meta_features
    near = nearest_from_matrix(mf.drop(index=[target]), mf.loc[target].to_dict(), k=5)["dataset_id"].tolist()
    hps = [{"name": h.name, "low": float(h.low), "high": float(h.high), "log": bool(h.log)} for h in sub.hyperparameters]

    def rows(task: str) -> list:
        g = past[(task, algorithm)]
        return [[[float(p[h["name"]]) for h in hps], float(v)] for p, v in zip(g.params, g.values)]

    spec = {"space": hps, "sources": [rows(t) for t in near], "target": rows(target),
            "n_observations": [n for n in N_OBS if n <= len(rows(target))], "repeats": 3, "seed": 0}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f)
    script = Path(__file__).with_name("openbox_rgpe_timing.py")
    done = subprocess.run([args.openbox_python, str(script), f.name], capture_output=True, text=True, check=True)
    return {k: float(v) for k, v in json.loads(done.stdout.strip().splitlines()[-1]).items()}


if __name__ == "__main__":
    sys.exit(main())
