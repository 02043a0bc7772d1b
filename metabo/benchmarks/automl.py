"""From a table to a fitted model under one wall-clock budget: ``metabo tune`` against FLAML.

Protocol (issue 17): for each dataset (a task of the shipped knowledge base) and seed, a
seeded stratified 75/25 outer split; every tool gets the 75% as a CSV and ``T`` seconds of
wall-clock time, returns a model, and is scored by the test error rate of that model's
predictions on the 25%. Each tool runs as its own process (its time is the whole
command's: interpreter start, imports, search and final fit) with one thread
(``OMP_NUM_THREADS=1`` and the tools' ``n_jobs=1``).

Held out: metabo's tools run on a copy of the knowledge base from which the dataset's
runs and meta-features, and those of every task with the same content (fingerprint), are
deleted; otherwise the 75% file, whose content differs, would transfer from its own
full-data runs.

Tools: ``metabo`` (``metabo tune --time-budget T --save-model`` with the default strategy,
then ``metabo predict``), ``metabo-gp`` (the same with ``--strategy gp``) and ``flaml``
(``AutoML.fit(time_budget=T, starting_points="data")``, its zero-shot start, in its own
virtual environment: its pins differ from this project's; ``scripts/automl_runners``).
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from metabo.exceptions import InputDataError

logger = logging.getLogger(__name__)

TOOLS = ("metabo", "metabo-gp", "flaml")
OVERRUN = 0.05
RUNNERS = Path(__file__).resolve().parents[2] / "scripts" / "automl_runners"


def one_thread_env() -> dict[str, str]:
    env = dict(os.environ)
    for key in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env[key] = "1"
    return env


def held_out_kb(source: str | os.PathLike[str], dest: Path, task: str) -> list[str]:
    """Copy the knowledge base ``source`` to ``dest`` without the runs and meta-features of
    ``task`` and the tasks of the same content; return the tasks removed."""
    from metabo.kb import KnowledgeBase

    shutil.copyfile(source, dest)
    with KnowledgeBase(dest) as kb:
        same = kb.query("SELECT dataset_id FROM datasets WHERE fingerprint = "
                        "(SELECT fingerprint FROM datasets WHERE dataset_id = ?)", [task])["dataset_id"].tolist()
        drop = sorted({task, *same})
        with kb.transaction() as tx:
            for table in ("runs", "meta_features"):
                tx.execute(f"DELETE FROM {table} WHERE dataset_id IN (SELECT unnest(?::VARCHAR[]))", [drop])
    return drop


def outer_split(y: np.ndarray, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Stratified 75/25 row indices."""
    from sklearn.model_selection import train_test_split

    rows = np.arange(len(y))
    counts = pd.Series(y).value_counts()
    strat = y if counts.min() >= 2 else None
    return tuple(np.sort(p) for p in train_test_split(rows, test_size=0.25, random_state=seed, stratify=strat))


def _run(cmd: Sequence[str], *, timeout: float) -> tuple[float, int, str]:
    start = time.monotonic()
    try:
        done = subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout, env=one_thread_env())
        return time.monotonic() - start, done.returncode, done.stdout[-4000:] + done.stderr[-2000:]
    except subprocess.TimeoutExpired as e:
        return time.monotonic() - start, -9, f"killed after {timeout:.0f} s: {str(e)[-500:]}"


def run_tool(tool: str, train: Path, test: Path, work: Path, *, budget: float, seed: int, kb: Path,
             flaml_python: str | None) -> dict[str, Any]:
    """Run ``tool`` on ``train`` (target column ``y``) for ``budget`` seconds; its
    predictions for ``test`` are written to ``work/pred.csv``."""
    pred = work / "pred.csv"
    hard = 3 * budget + 60
    if tool in ("metabo", "metabo-gp"):
        model = work / "model.joblib"
        cmd = [sys.executable, "-m", "metabo.cli.main", "tune", str(train), "--target", "y", "--time-budget",
               str(budget), "--save-model", str(model), "--kb", str(kb), "--seed", str(seed)]
        if tool == "metabo-gp":
            cmd += ["--strategy", "gp"]
        seconds, code, log = _run(cmd, timeout=hard)
        trials = next((int(line.split(": ")[1].split()[0]) for line in log.splitlines()
                       if line.startswith("session ") and " trials on " in line), None)
        first = next((float(line.rsplit("first model after ", 1)[1].split()[0]) for line in log.splitlines()
                      if "first model after" in line), None)
        if code == 0:
            _, pcode, plog = _run([sys.executable, "-m", "metabo.cli.main", "predict", str(model), str(test),
                                   "--out", str(pred)], timeout=600)
            if pcode != 0:
                code, log = pcode, plog
    elif tool == "flaml":
        if flaml_python is None:
            raise InputDataError("flaml needs --flaml-python (scripts/bench_automl.py makes its venv)")
        cmd = [flaml_python, str(RUNNERS / "flaml_runner.py"), str(train), str(test), str(pred), str(budget),
               str(seed)]
        seconds, code, log = _run(cmd, timeout=hard)
        info = next((json.loads(line) for line in log.splitlines() if line.startswith("{")), {})
        trials, first = info.get("trials"), info.get("first_model_seconds")
    else:
        raise InputDataError(f"unknown tool {tool!r}; choose from {TOOLS}")
    return {"seconds": seconds, "code": code, "trials": trials, "first_model": first,
            "log": log if code != 0 else ""}


def error_rate(pred: Path, y_test: np.ndarray) -> float | None:
    if not pred.is_file():
        return None
    got = pd.read_csv(pred)["prediction"].astype(str).to_numpy()
    return float(np.mean(got != y_test.astype(str))) if len(got) == len(y_test) else None


def done_keys(path: Path) -> set[tuple[str, int, float, str]]:
    if not path.is_file():
        return set()
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return {(r["dataset"], r["seed"], float(r["budget"]), r["tool"]) for r in rows}


def summarize(rows: Sequence[Mapping[str, Any]]) -> str:
    """Mean test error, average rank (ties averaged), wins/ties/losses of ``metabo`` against
    each tool, Wilcoxon p, time to the first model and overruns, per budget; over the
    (dataset, seed) cells every tool finished."""
    from scipy.stats import rankdata, wilcoxon

    frame = pd.DataFrame(rows)
    out = []
    for budget, group in frame.groupby("budget"):
        table = group.pivot_table(index=["dataset", "seed"], columns="tool", values="test_error")
        table = table.dropna()
        tools = list(table.columns)
        ranks = pd.DataFrame(np.apply_along_axis(rankdata, 1, table.to_numpy()), columns=tools)
        out.append(f"budget {budget:g} s: {len(table)} cells (dataset x seed) every tool finished")
        for tool in tools:
            g = group[group["tool"] == tool]
            over = float(np.mean(g["seconds"] > (1 + OVERRUN) * budget))
            first = g["first_model"].dropna()
            out.append(f"  {tool:10s} test error {table[tool].mean():.4f}  rank {ranks[tool].mean():.2f}  "
                       f"overrun>5% {over:.0%}  mean seconds {g['seconds'].mean():.1f}  "
                       f"first model {first.mean() if len(first) else float('nan'):.1f} s  "
                       f"trials {g['trials'].dropna().mean():.0f}")
        if "metabo" in tools:
            for tool in tools:
                if tool == "metabo":
                    continue
                d = table["metabo"] - table[tool]
                p = wilcoxon(d).pvalue if (d != 0).any() else 1.0
                out.append(f"  metabo vs {tool}: {(d < 0).sum()} wins, {(d == 0).sum()} ties, {(d > 0).sum()} "
                           f"losses, Wilcoxon p {p:.3g}")
    return "\n".join(out)


def plot(rows: Sequence[Mapping[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    frame = pd.DataFrame(rows)
    budgets = sorted(frame["budget"].unique())
    fig, axes = plt.subplots(1, len(budgets), figsize=(5 * len(budgets), 4), squeeze=False)
    for ax, budget in zip(axes[0], budgets):
        table = frame[frame["budget"] == budget].pivot_table(index=["dataset", "seed"], columns="tool",
                                                              values="test_error").dropna()
        ax.boxplot([table[t] for t in table.columns], tick_labels=list(table.columns))
        ax.set_title(f"test error at {budget:g} s ({len(table)} cells)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


__all__ = ["TOOLS", "done_keys", "error_rate", "held_out_kb", "outer_split", "plot", "run_tool", "summarize"]
