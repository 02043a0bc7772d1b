"""A table to a fitted model under one wall-clock budget: metabo tune (default, cold GP-BO)
against FLAML, on datasets held out from the knowledge base (metabo.benchmarks.automl).

    python scripts/bench_automl.py run [--datasets 20] [--seeds 2] [--budgets 30 120]
        [--tools metabo,metabo-gp,flaml] [--parallel 2] [--out reports/automl]
    python scripts/bench_automl.py report [--out reports/automl]

Results are appended to <out>/runs.jsonl one line per (dataset, seed, budget, tool), so a
killed run resumes where it stopped. FLAML gets its own virtual environment (made on first
use under <metabo home>/cache/venv-flaml): its pins differ from this project's.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from tqdm import tqdm

from metabo.benchmarks import automl
from metabo.benchmarks.transfer_live import choose_datasets, dataset_spec
from metabo.benchmarks.transfer_methods import shipped_kb_file
from metabo.kb import KnowledgeBase
from metabo.paths import cache_dir


def flaml_python() -> str:
    venv = cache_dir("venv-flaml")
    python = venv / "bin" / "python"
    if not python.exists():
        print(f"making FLAML's virtual environment in {venv} (pip install 'flaml[automl]')", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", "flaml[automl]", "pandas", "packaging"], check=True)
    return str(python)


def run(args: argparse.Namespace) -> int:
    from metabo.data.loaders import load_dataset

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = out / "runs.jsonl"
    done = automl.done_keys(results)
    kb_file = shipped_kb_file(args.kb)
    with KnowledgeBase(kb_file, read_only=True) as kb:
        tasks = kb.query("SELECT DISTINCT dataset_id FROM runs")["dataset_id"].tolist()
        chosen = choose_datasets(kb, tasks, n=args.datasets, seed=args.dataset_seed, max_instances=args.max_rows)
        specs = {t: dataset_spec(kb, t) for t in chosen}
    print("datasets:", ", ".join(specs.values()))
    tools = args.tools.split(",")
    fpy = flaml_python() if "flaml" in tools else None
    scratch = Path(tempfile.mkdtemp(prefix="bench-automl-"))
    jobs = []
    for seed in range(args.seeds):
        for task, spec in specs.items():
            data = load_dataset(spec)
            y = data.y.astype(str).to_numpy()
            train_rows, test_rows = automl.outer_split(y, seed)
            cell = scratch / f"{task}-{seed}"
            cell.mkdir(parents=True, exist_ok=True)
            frame = data.X.copy()
            frame["y"] = y
            frame.iloc[train_rows].to_csv(cell / "train.csv", index=False)
            frame.iloc[test_rows].drop(columns="y").to_csv(cell / "test.csv", index=False)
            kb_copy = cell / "kb.duckdb"
            removed = automl.held_out_kb(kb_file, kb_copy, task)
            for budget in args.budgets:
                for tool in tools:
                    if (spec, seed, float(budget), tool) not in done:
                        jobs.append((spec, seed, budget, tool, cell, y[test_rows], kb_copy, removed))

    def one(job):
        spec, seed, budget, tool, cell, y_test, kb_copy, removed = job
        work = Path(tempfile.mkdtemp(dir=cell, prefix=f"{tool}-{budget}-"))
        own_kb = work / "kb.duckdb"  # each run writes its session: one store per run, no lock shared
        if tool != "flaml":
            shutil.copyfile(kb_copy, own_kb)
        info = automl.run_tool(tool, cell / "train.csv", cell / "test.csv", work, budget=budget, seed=seed,
                               kb=own_kb, flaml_python=fpy)
        if tool != "flaml":
            own_kb.unlink(missing_ok=True)
        return {"dataset": spec, "seed": seed, "budget": float(budget), "tool": tool,
                "test_error": automl.error_rate(work / "pred.csv", y_test), "held_out": removed, **info}

    with ThreadPoolExecutor(args.parallel) as pool, open(results, "a") as f:
        for row in tqdm(pool.map(one, jobs), total=len(jobs), desc="tool runs"):
            f.write(json.dumps(row) + "\n")
            f.flush()
    return report(args)


def report(args: argparse.Namespace) -> int:
    out = Path(args.out)
    rows = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines() if line.strip()]
    text = automl.summarize(rows)
    print(text)
    (out / "summary.txt").write_text(text + "\n")
    automl.plot(rows, out / "test_error.png")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", choices=("run", "report"))
    p.add_argument("--kb", help="knowledge base file (default: the shipped export in a temporary store)")
    p.add_argument("--datasets", type=int, default=20)
    p.add_argument("--dataset-seed", type=int, default=0)
    p.add_argument("--max-rows", type=int, default=5000)
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--budgets", type=float, nargs="+", default=[30.0, 120.0])
    p.add_argument("--tools", default=",".join(automl.TOOLS))
    p.add_argument("--parallel", type=int, default=2)
    p.add_argument("--out", default="reports/automl")
    args = p.parse_args()
    np.seterr(all="ignore")
    return run(args) if args.command == "run" else report(args)


if __name__ == "__main__":
    sys.exit(main())
