"""How long does writing a fitted member to a model file take, against its fit?

    python scripts/bench_model_write.py [--datasets keel:marketing keel:spambase ...]
        [--configs 2] [--seed 7] [--out reports/model-write]

For each dataset and each algorithm of the default space, ``--configs`` configurations drawn
from its space (seeded) are fitted as the final model is (:meth:`EnsembleModel.fit_dataset`
on every row, one member) and written as ``metabo tune --save-model`` writes it
(:meth:`EnsembleModel.save`: skops' walk and zip, the type audit, the signed local copy). One
JSON line per (dataset, algorithm, configuration) goes to ``<out>/runs.jsonl`` (a rerun skips
those done); printed per algorithm: the fit and write seconds and their ratio, then the
shares of members whose write takes at most ``r`` times their fit, and the ratio of the
writes' sum to the fits' sum over members fitting in more than 0.5 s, which sets
:data:`metabo.tuning.final.WRITE_PER_FIT`. The skops import is paid before timing.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

from metabo.data.dataset import Dataset
from metabo.data.loaders import load_dataset
from metabo.ensembles.model import EnsembleModel
from metabo.space.algorithms import ALGORITHMS, get_algorithm

DATASETS = ("keel:marketing", "keel:spambase", "keel:movement_libras", "keel:wdbc")


def measure(spec: str, data: Dataset, algorithm: str, params: dict, folder: Path) -> dict:
    """Fit one member on every row of ``data`` and write it; its seconds and the file's size."""
    began = time.perf_counter()
    model = EnsembleModel([(algorithm, params)], None, "average", 0).fit_dataset(data)
    fit = time.perf_counter() - began
    path = folder / "m.skops"
    began = time.perf_counter()
    model.save(path)
    write = time.perf_counter() - began
    return {"dataset": spec, "rows": data.n_instances, "algorithm": algorithm, "params": params, "fit": fit,
            "write": write, "bytes": os.path.getsize(path)}


def summary(runs: list[dict]) -> str:
    lines = [f"{len(runs)} members: fit and write seconds (sum over datasets and configurations), write/fit",
             f"{'algorithm':28s} {'fit s':>8s} {'write s':>8s} {'ratio':>6s} {'max ratio':>9s}"]
    for algorithm in ALGORITHMS:
        mine = [r for r in runs if r["algorithm"] == algorithm]
        if not mine:
            continue
        fit, write = sum(r["fit"] for r in mine), sum(r["write"] for r in mine)
        worst = max(r["write"] / max(r["fit"], 1e-3) for r in mine)
        lines.append(f"{algorithm:28s} {fit:8.2f} {write:8.2f} {write / max(fit, 1e-3):6.2f} {worst:9.2f}")
    ratios = np.array([r["write"] / max(r["fit"], 1e-3) for r in runs])
    big = [r for r in runs if r["fit"] > 0.5]
    slow = np.array([r["write"] / r["fit"] for r in big])
    lines.append(f"all: median write/fit {np.median(ratios):.2f}; share with write <= 0.5/1/2 x fit: "
                 + "/".join(f"{np.mean(ratios <= r):.2f}" for r in (0.5, 1, 2)))
    if big:
        lines.append(f"fits over 0.5 s ({len(slow)}): share with write <= 0.5/1/2 x fit: "
                     + "/".join(f"{np.mean(slow <= r):.2f}" for r in (0.5, 1, 2))
                     + f"; write/fit of their sums {sum(r['write'] for r in big) / sum(r['fit'] for r in big):.2f}")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", nargs="+", default=list(DATASETS))
    p.add_argument("--configs", type=int, default=2)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--out", default="reports/model-write")
    args = p.parse_args()
    warnings.filterwarnings("ignore")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    runs_file = out / "runs.jsonl"
    runs = [json.loads(line) for line in runs_file.read_text().splitlines()] if runs_file.exists() else []
    done = {(r["dataset"], r["algorithm"], json.dumps(r["params"], sort_keys=True)) for r in runs}
    import skops.io  # noqa: F401 - its import (about a second) is not a write's

    with tempfile.TemporaryDirectory() as folder, runs_file.open("a") as f:
        for spec in args.datasets:
            data = load_dataset(spec)
            for algorithm in ALGORITHMS:
                for params in get_algorithm(algorithm).space.sample(seed=args.seed, n=args.configs):
                    if (spec, algorithm, json.dumps(params, sort_keys=True)) in done:
                        continue
                    try:
                        run = measure(spec, data, algorithm, params, Path(folder))
                    except Exception as e:  # noqa: BLE001 - a failed fit is reported and skipped
                        print(f"{spec} {algorithm}: failed ({type(e).__name__}: {e})", flush=True)
                        continue
                    runs.append(run)
                    f.write(json.dumps(run) + "\n")
                    f.flush()
                    print(f"{spec} {algorithm}: fit {run['fit']:.2f} s, write {run['write']:.2f} s "
                          f"({run['bytes'] / 1e6:.1f} MB)", flush=True)
    text = summary(runs)
    (out / "summary.txt").write_text(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
