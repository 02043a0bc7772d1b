"""A table to a fitted model under one wall-clock budget: metabo tune (default, cold GP-BO)
against FLAML and Optuna's TPE, on datasets held out from the knowledge base
(protocol and tools: benchmarks.automl).

    python scripts/bench_automl.py run [--datasets 20] [--seeds 2] [--budgets 30 120]
        [--tools metabo,metabo-gp,metabo-gp-single,metabo-single,flaml,autogluon,autogluon-best,optuna] [--parallel 2]
        [--max-rows 5000] [--min-rows 0] [--extra keel:ring keel:imbalanced/page-blocks0 ...]
        [--out reports/automl]
    python scripts/bench_automl.py report [--out reports/automl] [--tools-only metabo,flaml]
        [--only rdata:diamonds keel:magic ...] [--name large]

Results are appended to <out>/runs.jsonl, one line per (dataset, seed, budget, tool), so
a killed run resumes where it stopped (keys already there are skipped; delete a line to
run it again). Runs go budget by budget, so the first budget's table fills first. A report of
a part (some tools, some datasets) goes to <out>/<name>.txt beside the whole one.
FLAML and AutoGluon each get their own virtual environment (made on first use,
--flaml-venv, --autogluon-venv): they pin their own scikit-learn, LightGBM and XGBoost
ranges, which need not agree with this project's.
"""

from __future__ import annotations

import argparse
import json
import logging
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import _repo  # noqa: F401 - first: the repository's root on sys.path, for benchmarks/ (not installed)
import numpy as np
from tqdm import tqdm

from benchmarks import automl
from benchmarks.transfer_live import choose_datasets, dataset_spec
from benchmarks.transfer_methods import shipped_kb_file
from metabo.kb import KnowledgeBase
from metabo.kb.datasets import dataset_ids_with_fingerprint
from metabo.paths import cache_dir


def peer_python(tool: str, venv: Path) -> str:
    """The python of ``tool``'s virtual environment ``venv`` (:data:`automl.PEERS`), made
    first if missing: FLAML and AutoGluon pin their own scikit-learn, LightGBM and XGBoost
    ranges, which need not agree with this project's (or each other's)."""
    requirement, module = automl.PEERS[tool]
    python = venv / "bin" / "python"
    installed = python.exists() and subprocess.run([str(python), "-c", f"import {module}"],
                                                   capture_output=True).returncode == 0
    if not installed:
        print(f"{tool} runs in its own virtual environment (its pins differ from metabo's); making it in {venv} "
              f"with pip install '{requirement}' (minutes, one or more GB)", file=sys.stderr)
        if not python.exists():
            subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(python), "-m", "pip", "install", "-q", *requirement.split(), "pandas"], check=True)
    package = requirement.split("[")[0]
    version = subprocess.run([str(python), "-c", f"import importlib.metadata as m; print(m.version({package!r}))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    print(f"{package} {version} in {venv}")
    return str(python)


def trainable(spec: str):
    """The dataset of ``spec`` as the knowledge base's runs were trained on it (KEEL columns
    that lost their decimal points repaired, or dropped where no clean file repairs them)."""
    from metabo.ingest.build import load_for_training

    loaded = load_for_training(spec)
    if loaded.trainable is None:
        raise SystemExit(f"{spec} cannot be trained on: {loaded.note}")
    if loaded.note:
        print(f"  {spec}: {loaded.note}")
    return loaded.trainable


def slug(task: str) -> str:
    """``task`` as a file name (an extra dataset's spec holds ':' and '/')."""
    return task.replace("/", "_").replace(":", "_")


def run(args: argparse.Namespace) -> int:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    results = out / "runs.jsonl"
    tools = args.tools.split(",")
    unknown = sorted(set(tools) - set(automl.TOOLS))
    if unknown:
        raise SystemExit(f"unknown tools {unknown}; choose from {','.join(automl.TOOLS)}")
    kb_file = shipped_kb_file(args.kb)
    with KnowledgeBase(kb_file, read_only=True) as kb:
        tasks = kb.query("SELECT DISTINCT dataset_id FROM runs")["dataset_id"].tolist()
        chosen = choose_datasets(kb, tasks, names=args.names, n=args.datasets, seed=args.dataset_seed,
                                 max_instances=args.max_rows or None, min_instances=args.min_rows)
        specs = {t: dataset_spec(kb, t) for t in chosen}
        info = {t: kb.get_dataset(t) for t in chosen}
        loaded = {}  # the --extra datasets, read once
        for spec in args.extra or []:  # outside the store: held out by content, if the store has it
            data = trainable(spec)
            same = dataset_ids_with_fingerprint(kb, data.fingerprint)
            task = same[0] if same else spec
            if task in specs:
                continue
            loaded[spec] = data
            chosen.append(task)
            specs[task] = spec
            info[task] = {"n_instances": data.n_instances, "n_features": data.n_features, "n_classes": data.n_classes}
    print(f"{len(specs)} datasets (rows, features, classes):")
    for t in sorted(chosen, key=lambda t: info[t]["n_instances"]):
        print(f"  {specs[t]:28s} {info[t]['n_instances']:6d} {info[t]['n_features']:4d} {info[t]['n_classes']:3d}")
    jobs = [{"dataset": specs[t], "task": t, "seed": s, "budget": float(b), "tool": tool}
            for b in args.budgets for s in range(args.seeds) for t in chosen for tool in tools]
    todo = automl.pending(jobs, automl.done_keys(results))
    print(f"{len(jobs)} tool runs, {len(jobs) - len(todo)} already in {results}, {len(todo)} to run")
    if not todo:
        return report(args)
    needed = {automl.PEER_TOOLS[j["tool"]][0] for j in todo if j["tool"] in automl.PEER_TOOLS}
    pythons = {venv: peer_python(venv, Path(getattr(args, f"{venv}_venv"))) for venv in automl.PEERS if venv in needed}

    scratch = Path(tempfile.mkdtemp(prefix="bench-automl-"))
    held: dict[str, tuple[Path, list[str]]] = {}
    cells: dict[tuple[str, int], np.ndarray] = {}
    for job in todo:  # the held-out stores and the split files, once each
        task, seed = job["task"], job["seed"]
        if task not in held and job["tool"].startswith("metabo"):
            copy = scratch / f"{slug(task)}.duckdb"
            if task in tasks:
                held[task] = copy, automl.held_out_kb(kb_file, copy, task)
            else:  # a dataset the store does not hold: the whole store is the past
                shutil.copyfile(kb_file, copy)
                held[task] = copy, []
        if (task, seed) not in cells:
            data = loaded[job["dataset"]] if job["dataset"] in loaded else trainable(job["dataset"])
            cells[task, seed] = automl.write_cell(data, seed, scratch / f"{slug(task)}-{seed}")

    def one(job):
        task, seed, budget, tool = job["task"], job["seed"], job["budget"], job["tool"]
        cell = scratch / f"{slug(task)}-{seed}"
        work = Path(tempfile.mkdtemp(dir=cell, prefix=f"{tool}-{budget:g}-"))
        own_kb, removed = None, None
        if tool.startswith("metabo"):  # each run writes its session: its own store, no lock shared
            own_kb, removed = work / "kb.duckdb", held[task][1]
            shutil.copyfile(held[task][0], own_kb)
        res = automl.run_tool(tool, cell / "train.csv", cell / "test.csv", work, budget=budget, seed=seed,
                              kb=own_kb, peer_python=pythons, baseline=args.baseline_src)
        row = {"dataset": job["dataset"], "seed": seed, "budget": budget, "tool": tool,
               "test_error": automl.error_rate(work / "pred.csv", cells[task, seed]),
               "balanced_error": automl.balanced_error_rate(work / "pred.csv", cells[task, seed]), "held_out": removed,
               **res}
        shutil.rmtree(work, ignore_errors=True)
        return row

    with ThreadPoolExecutor(args.parallel) as pool, open(results, "a") as f:
        futures = [pool.submit(one, job) for job in todo]
        bar = tqdm(as_completed(futures), total=len(futures), desc="tool runs", unit="run")
        for future in bar:
            row = future.result()
            f.write(json.dumps(row) + "\n")
            f.flush()
            err = "failed" if row["test_error"] is None else f"{row['test_error']:.3f}"
            bar.set_postfix_str(f"{row['tool']} {row['dataset']} {row['budget']:g}s: {row['seconds']:.0f}s err {err}")
            if row["code"] != 0:
                tqdm.write(f"{row['tool']} failed on {row['dataset']} seed {row['seed']} at {row['budget']:g} s "
                           f"(code {row['code']}): {row['log'][-300:]}")
    shutil.rmtree(scratch, ignore_errors=True)
    return report(args)


def report(args: argparse.Namespace) -> int:
    out = Path(args.out)
    rows = automl.read_results(out / "runs.jsonl")
    if not rows:
        raise SystemExit(f"no results in {out / 'runs.jsonl'}; run first")
    name = "summary"
    if args.command == "report" and (args.tools_only or args.only):
        # a part of the results: these tools, these datasets (its own files, named for it)
        tools = set(args.tools_only.split(",")) if args.tools_only else {r["tool"] for r in rows}
        datasets = set(args.only) if args.only else {r["dataset"] for r in rows}
        rows = [r for r in rows if r["tool"] in tools and r["dataset"] in datasets]
        name = args.name or "summary-part"
        if not rows:
            raise SystemExit("no results of those tools and datasets")
    text = automl.summarize(rows)
    print(text)
    (out / f"{name}.txt").write_text(text + "\n")
    plot = out / ("test_error.png" if name == "summary" else f"test_error-{name}.png")
    automl.plot(rows, plot)
    print(f"wrote {out / f'{name}.txt'} and {plot}")
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", choices=("run", "report"))
    p.add_argument("--kb", help="knowledge base file (default: the shipped export in a temporary store)")
    p.add_argument("--datasets", type=int, default=20, help="how many of the knowledge base's tasks to draw")
    p.add_argument("--names", nargs="+", help="these tasks (dataset ids) instead of a draw")
    p.add_argument("--dataset-seed", type=int, default=0)
    p.add_argument("--max-rows", type=int, default=5000,
                   help="draw among tasks of at most this many rows (0: no limit)")
    p.add_argument("--min-rows", type=int, default=0, help="draw among tasks of at least this many rows")
    p.add_argument("--extra", nargs="+", help="datasets outside the knowledge base as well (loader specs such as "
                   "keel:ring or keel:imbalanced/page-blocks0; one the store holds by content is held out as "
                   "its tasks are)")
    p.add_argument("--seeds", type=int, default=2)
    p.add_argument("--budgets", type=float, nargs="+", default=[30.0, 120.0], help="seconds per tool run")
    p.add_argument("--tools", default=",".join(t for t in automl.TOOLS if t != "metabo-baseline"))
    p.add_argument("--baseline-src", help="the checkout of the repository metabo-baseline runs (a change "
                   "against the code before it, in the same run)")
    p.add_argument("--parallel", type=int, default=2, help="tool runs at once (each on one core)")
    for tool in automl.PEERS:
        p.add_argument(f"--{tool}-venv", default=str(cache_dir(f"venv-{tool}")),
                       help=f"{tool}'s own virtual environment (made on first use)")
    p.add_argument("--out", default="reports/automl")
    p.add_argument("--tools-only", help="report: summarize these tools' runs only (comma-separated)")
    p.add_argument("--only", nargs="+", help="report: summarize these datasets' runs only (specs as in runs.jsonl)")
    p.add_argument("--name", help="report of a part (--tools-only, --only): the summary's file name "
                                  "(default summary-part)")
    args = p.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    np.seterr(all="ignore")
    return run(args) if args.command == "run" else report(args)


if __name__ == "__main__":
    sys.exit(main())
