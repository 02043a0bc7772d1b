"""Does XGBoost's and CatBoost's own categorical handling beat ordinal codes read as numbers?

    python scripts/bench_native_categorical.py [--configs 6] [--seed 0] [--datasets keel:crx ...]
        [--out reports/native-categorical]

On the KEEL tables with nominal feature columns (default: those of the shipped knowledge
base, each as its runs were trained on it, plus car-good and flare-F), each algorithm's default
configuration and ``--configs - 1`` drawn from its space (seeded) are evaluated as ``metabo
tune`` scores a trial (5-fold cross-validation of the 80% not kept for test, up to 3,000
training rows) twice, on the same folds: ``ordinal`` (the codes as numbers) and ``native``
(the codes given as categories: XGBoost's categorical splits, CatBoost's ordered target
statistics; :func:`metabo.evaluation.preprocessing.tell_nominal`). Printed per algorithm:
mean cross-validated error of each, wins/ties/losses and the Wilcoxon signed-rank p over
(dataset, configuration) pairs, the datasets' mean, and the fit seconds' ratio. One JSON
line per evaluation pair goes to ``<out>/runs.jsonl`` (a rerun skips the pairs done), the
table to ``<out>/summary.txt``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import _repo  # noqa: F401 - first: the repository's root on sys.path, for benchmarks/ (not installed)
import numpy as np
import pandas as pd
from scipy.stats import wilcoxon

from metabo.evaluation.evaluate import evaluate
from metabo.evaluation.factories import registry_factory
from metabo.evaluation.protocols import search_protocol
from metabo.space.algorithms import get_algorithm

ALGORITHMS = ("xgboost", "catboost")
#: KEEL tables with nominal features that the knowledge base does not hold, added to its own
EXTRA = ("keel:car-good", "keel:flare-F")


def tables(names: list[str] | None) -> list[str]:
    """``names``, or the KEEL specs of the shipped store's tasks with a nominal feature plus :data:`EXTRA`."""
    if names:
        return names
    from benchmarks.transfer_methods import shipped_kb_file
    from metabo.kb import KnowledgeBase

    with KnowledgeBase(shipped_kb_file(None), read_only=True) as kb:
        found = kb.query(
            "SELECT DISTINCT d.source, d.name, d.n_instances FROM datasets d JOIN meta_features m USING (dataset_id) "
            "WHERE d.source = 'keel' AND m.name = 'NumberOfSymbolicFeatures' AND m.value > 1 "
            "AND d.dataset_id IN (SELECT dataset_id FROM runs) ORDER BY d.n_instances")
    return [f"keel:{n}" for n in found["name"]] + list(EXTRA)


def configurations(algorithm: str, n: int, seed: int) -> list[dict[str, Any]]:
    """The default configuration of ``algorithm`` and ``n - 1`` drawn from its space."""
    space = get_algorithm(algorithm).space
    drawn = space.sample(seed, n - 1) if n > 1 else []
    return [space.default_configuration(), *drawn]


def with_encoding(encoding: str):
    """The registry's factory, the algorithm's nominal encoding replaced by ``encoding``."""

    def factory(algorithm: str, params: dict[str, Any], seed: int | None):
        spec, estimator = registry_factory(algorithm, params, seed)
        return dataclasses.replace(spec, encoding=encoding), estimator

    return factory


def run(args: argparse.Namespace) -> None:
    from metabo.ingest.build import load_for_training

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = out / "runs.jsonl"
    done = set()
    if log.exists():
        done = {(r["dataset"], r["algorithm"], r["config"]) for r in map(json.loads, log.read_text().splitlines())}
    for spec in tables(args.datasets):
        loaded = load_for_training(spec)
        data = loaded.trainable
        if data is None or "nominal" not in data.feature_kinds:
            print(f"{spec}: no nominal feature to encode, skipped", file=sys.stderr)
            continue
        protocol = search_protocol("auto", data.n_instances)
        for algorithm in ALGORITHMS:
            for i, params in enumerate(configurations(algorithm, args.configs, args.seed)):
                if (spec, algorithm, i) in done:
                    continue
                row: dict[str, Any] = {"dataset": spec, "rows": data.n_instances, "algorithm": algorithm, "config": i,
                                       "params": params}
                for encoding in ("ordinal", "native"):
                    evs = evaluate(algorithm, params, data, protocol=protocol, seed=args.seed,
                                   factory=with_encoding(encoding), time_limit=args.time_limit)
                    ok = all(e.ok for e in evs)
                    row[encoding] = float(np.mean([e.valid["error_rate"] for e in evs])) if ok else None
                    row[f"{encoding}_seconds"] = float(np.nansum([e.fit_seconds for e in evs]))
                    row[f"{encoding}_status"] = "ok" if ok else next(e.status for e in evs if not e.ok)
                with log.open("a") as f:
                    f.write(json.dumps(row) + "\n")
                print(f"{spec} {algorithm} #{i}: ordinal {row['ordinal']} native {row['native']}", flush=True)


def report(args: argparse.Namespace) -> str:
    rows = pd.DataFrame([json.loads(line) for line in (Path(args.out) / "runs.jsonl").read_text().splitlines()])
    lines = [f"{rows['dataset'].nunique()} tables with nominal features, {rows['config'].nunique()} configurations "
             "per algorithm, 5-fold CV as tune scores a trial", ""]
    for algorithm, group in rows.groupby("algorithm"):
        both = group.dropna(subset=["ordinal", "native"])
        diff = both["native"] - both["ordinal"]
        wins, ties, losses = int((diff < -1e-12).sum()), int((diff.abs() <= 1e-12).sum()), int((diff > 1e-12).sum())
        p = wilcoxon(both["native"], both["ordinal"]).pvalue if (diff.abs() > 1e-12).any() else 1.0
        per_table = both.groupby("dataset")[["ordinal", "native"]].mean()
        tw = int((per_table["native"] < per_table["ordinal"] - 1e-12).sum())
        tl = int((per_table["native"] > per_table["ordinal"] + 1e-12).sum())
        ratio = float(np.median(both["native_seconds"] / both["ordinal_seconds"].clip(lower=1e-6)))
        failed = int(group["native"].isna().sum()), int(group["ordinal"].isna().sum())
        lines.append(f"{algorithm:9s} ordinal {both['ordinal'].mean():.4f}  native {both['native'].mean():.4f}  "
                     f"pairs {wins}/{ties}/{losses} (native wins/ties/losses), Wilcoxon p {p:.3g}; tables "
                     f"{tw} better, {tl} worse; fit seconds native/ordinal median {ratio:.2f}; failed native "
                     f"{failed[0]}, ordinal {failed[1]}")
        for dataset, t in per_table.iterrows():
            lines.append(f"    {dataset:22s} ordinal {t['ordinal']:.4f}  native {t['native']:.4f}")
    text = "\n".join(lines)
    (Path(args.out) / "summary.txt").write_text(text + "\n")
    return text


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", choices=("run", "report"), nargs="?", default="run")
    p.add_argument("--datasets", nargs="+", help="loader specs (default: module docstring)")
    p.add_argument("--configs", type=int, default=6, help="configurations per algorithm (the default first)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--time-limit", type=float, default=60.0, help="seconds per fold")
    p.add_argument("--out", default="reports/native-categorical")
    args = p.parse_args()
    if args.command == "run":
        run(args)
    print(report(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
