"""Does ``metabo tune`` stop when it should? Wall-clock figures of the command line.

1. A wide table (60 rows x 10,000 numeric columns, seeded): the seconds from the start of
   ``metabo tune wide.csv --target class --time-budget B`` to its exit, and its last line.
2. Ctrl-C: ``metabo tune`` on the wide table and on a normal one (scikit-learn's
   breast_cancer written as CSV), interrupted by SIGINT after each delay; the seconds
   from the signal to the exit, and the exit code. ``--group`` sends it to the process
   group, as a terminal's Ctrl-C does (the workers get it too); by default to the
   process alone.

Each run gets a fresh knowledge base in a temporary folder (``--kb`` copies one, e.g. the
default store, so that the warm start's reads count). The machine's load average is
printed with every figure: these are timings of a shared machine.

    python scripts/bench_runaway.py --delays 1 3 6 10 --time-budget 8

The time-budget figure is given without and with ``--save-model`` (the model file written
or not).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd


def wide_csv(folder: Path, rows: int = 60, columns: int = 10_000) -> Path:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(rows, columns))
    frame = pd.DataFrame(X, columns=[f"f{i}" for i in range(columns)])
    frame["class"] = np.where(X[:, 0] + rng.normal(size=rows) > 0, "a", "b")
    path = folder / "wide.csv"
    frame.to_csv(path, index=False)
    return path


def normal_csv(folder: Path) -> Path:
    from sklearn.datasets import load_breast_cancer

    frame = load_breast_cancer(as_frame=True).frame.rename(columns={"target": "class"})
    path = folder / "normal.csv"
    frame.to_csv(path, index=False)
    return path


def load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def command(data: Path, kb: Path, extra: list[str]) -> list[str]:
    """The ``metabo`` console command of this environment (as a user runs it)."""
    metabo = Path(sys.executable).with_name("metabo")
    start = [str(metabo)] if metabo.exists() else [sys.executable, "-m", "metabo.cli.main"]
    return [*start, "tune", str(data), "--target", "class", "--kb", str(kb), *extra]


def fresh_kb(folder: Path, source: Path | None, name: str) -> Path:
    path = folder / f"{name}.duckdb"
    if source is not None:
        shutil.copy(source, path)
    return path


def run_budget(data: Path, kb: Path, budget: float, save: Path | None = None) -> None:
    start = time.monotonic()
    extra = ["--time-budget", str(budget), *([] if save is None else ["--save-model", str(save)])]
    done = subprocess.run(command(data, kb, extra), capture_output=True, text=True)
    wall = time.monotonic() - start
    lines = [line for line in (done.stdout + done.stderr).splitlines()
             if line.strip() and "Warning" not in line and "X[str(col)]" not in line]
    print(f"time budget {budget:g} s on {data.name}: exit {done.returncode} after {wall:.1f} s "
          f"(load {load()}); last line: {lines[-1] if lines else ''}", flush=True)
    if save is not None:
        print(f"  model file written: {save.exists()}", flush=True)


def run_interrupt(data: Path, kb: Path, delay: float, group: bool, extra: list[str]) -> float:
    proc = subprocess.Popen(command(data, kb, extra), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, start_new_session=True,  # Ctrl-C handled as in a terminal, even when
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # run in the background
    time.sleep(delay)
    if proc.poll() is not None:
        print(f"  {data.name} after {delay:g} s: had already ended (exit {proc.returncode})", flush=True)
        return float("nan")
    sent = time.monotonic()
    if group:
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        _, err = proc.communicate()
    took = time.monotonic() - sent
    last = [line for line in err.splitlines() if line.strip() and "Warning" not in line and "X[str(col)]" not in line]
    print(f"  {data.name} SIGINT after {delay:g} s: exit {proc.returncode} {took:.2f} s later (load {load()}); "
          f"{last[-1][:110] if last else ''}", flush=True)
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delays", type=float, nargs="+", default=[1.0, 3.0, 6.0, 10.0])
    parser.add_argument("--time-budget", type=float, default=8.0)
    parser.add_argument("--kb", type=Path, help="a store to copy for each run (default: a new empty one)")
    parser.add_argument("--group", action="store_true", help="send SIGINT to the process group (a terminal's Ctrl-C)")
    parser.add_argument("--skip-budget", action="store_true")
    parser.add_argument("--repeats", type=int, default=1, help="runs of the time-budget figure")
    parser.add_argument("--skip-interrupt", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        wide, normal = wide_csv(folder), normal_csv(folder)
        if not args.skip_budget:
            for i in range(args.repeats):
                run_budget(wide, fresh_kb(folder, args.kb, f"budget-{i}"), args.time_budget)
                run_budget(wide, fresh_kb(folder, args.kb, f"budget-save-{i}"), args.time_budget,
                           save=folder / f"wide-{i}.skops")
        if args.skip_interrupt:
            return 0
        worst = 0.0
        for data in (wide, normal):
            print(f"SIGINT to the {'process group' if args.group else 'process'}, {data.name}:", flush=True)
            for delay in args.delays:
                took = run_interrupt(data, fresh_kb(folder, args.kb, f"int-{data.stem}-{delay:g}"), delay, args.group,
                                     ["--budget", "30"])
                worst = max(worst, took) if took == took else worst
        print(f"slowest exit after SIGINT: {worst:.2f} s", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
