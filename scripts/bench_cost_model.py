"""How well :mod:`metabo.kb.costs` predicts a configuration's fit seconds on a task it has
not seen: every task of the knowledge base held out in turn, its configurations' fit
seconds predicted from the other tasks' records and compared with what was recorded.

    python scripts/bench_cost_model.py [--kb FILE] [--metric error_rate] [--large 8] [--out reports/cost-model]

Printed per model: the share of (task, configuration) predictions within a factor 2 of the
recorded median fit seconds, the median |log2(predicted / recorded)|, and its median
(the bias: above 0 over-predicts). Two held-out settings:

- ``all tasks``: each task predicted from all the others (mostly interpolation: the store's
  tables span 90 to 12,000 training rows);
- ``largest from smaller``: the ``--large`` tasks of most training rows, each predicted only
  from tasks of less than half its rows (extrapolation to larger tables).

Models: ``rows x features`` (the model ``metabo`` uses), ``rows only`` (the same without
the features' term) and ``rows, alpha >= 1`` (the model before features were added: one
exponent per algorithm clipped to [1, 2.5]). The table goes to ``<out>/summary.txt``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path

import _repo  # noqa: F401 - first: the repository's root on sys.path, for benchmarks/ (not installed)
import numpy as np
import pandas as pd

from benchmarks.transfer_methods import shipped_kb_file
from metabo.kb import KnowledgeBase
from metabo.kb.costs import predicted_fit_seconds, recorded_fit_seconds

Model = Callable[[pd.DataFrame, int, int], dict[str, float]]


def rows_alpha_at_least_one(records: pd.DataFrame, n_rows: int, n_features: int) -> dict[str, float]:
    """The model before this one: ``s (n / n_t)^alpha_a``, ``alpha_a`` the within-configuration
    slope on log rows clipped to [1, 2.5], the median over tasks."""
    frame = records[(records["seconds"] > 0) & (records["rows"] > 0)].assign(
        ls=lambda f: np.log(f["seconds"].astype(float)), ln=lambda f: np.log(f["rows"].astype(float)))
    alpha = {}
    for algorithm, group in frame.groupby("algorithm"):
        c = group[["ls", "ln"]] - group.groupby("config_id")[["ls", "ln"]].transform("mean")
        var = float((c["ln"] ** 2).sum())
        alpha[algorithm] = float(np.clip((c["ln"] * c["ls"]).sum() / var, 1.0, 2.5)) if var > 1e-12 else 1.0
    a = frame["algorithm"].map(alpha).to_numpy(dtype=float)
    scaled = frame["seconds"].to_numpy(dtype=float) * (n_rows / frame["rows"].to_numpy(dtype=float)) ** a
    return pd.Series(scaled, index=frame["config_id"].astype(str)).groupby(level=0).median().to_dict()


MODELS: dict[str, Model] = {
    "rows x features": lambda r, n, d: predicted_fit_seconds(r, n, d),
    "rows only": lambda r, n, d: predicted_fit_seconds(r, n),
    "rows, alpha >= 1 (before)": rows_alpha_at_least_one,
}


def held_out_errors(records: pd.DataFrame, model: Model, tasks: list[str], *, smaller_only: bool) -> np.ndarray:
    """log2(predicted / recorded) of every record (configuration, training size) of each
    held-out task that the other (or, with ``smaller_only``, the less than half as large)
    tasks recorded, predicted at the record's own rows and features."""
    out = []
    for task in tasks:
        held = records[records["dataset_id"] == task]
        rest = records[(records["dataset_id"] != task) & records["config_id"].isin(held["config_id"])]
        for (n, d), part in held.groupby(["rows", "features"]):
            known = rest[rest["rows"] < n / 2] if smaller_only else rest
            if known.empty:
                continue
            predicted = model(known, int(n), int(d))
            truth = part.set_index("config_id")["seconds"].astype(float)
            common = [c for c in truth.index if c in predicted]
            out.append(np.log2(np.array([predicted[c] for c in common]) / truth.loc[common].to_numpy()))
    return np.concatenate(out) if out else np.array([])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kb", help="knowledge base file (default: the shipped export in a temporary store)")
    p.add_argument("--metric", default="error_rate")
    p.add_argument("--large", type=int, default=8, help="the largest tasks predicted from smaller ones")
    p.add_argument("--out", default="reports/cost-model")
    args = p.parse_args()
    with KnowledgeBase(shipped_kb_file(args.kb), read_only=True) as kb:
        tasks = kb.query("SELECT DISTINCT dataset_id FROM runs WHERE metric = ? AND status = 'ok'",
                         [args.metric])["dataset_id"].tolist()
        records = recorded_fit_seconds(kb, tasks, metric=args.metric)
    records = records[(records["seconds"] > 0) & (records["rows"] > 0)]
    sizes = records.groupby("dataset_id")["rows"].max().sort_values()
    largest = sizes.index[-args.large:].tolist()
    lines = [f"{len(records)} (task, configuration) records of {records['dataset_id'].nunique()} tasks, "
             f"{records['config_id'].nunique()} configurations; metric {args.metric}",
             "largest tasks (training rows): " + ", ".join(f"{t} ({sizes[t]:.0f})" for t in largest), "",
             f"{'model':<28} {'held out':<22} {'n':>6} {'within 2x':>10} {'median |log2|':>14} {'bias log2':>10}"]
    for name, model in MODELS.items():
        for setting, tasks_, smaller in (("all tasks", tasks, False), ("largest from smaller", largest, True)):
            e = held_out_errors(records, model, tasks_, smaller_only=smaller)
            lines.append(f"{name:<28} {setting:<22} {len(e):>6} {np.mean(np.abs(e) <= 1):>10.3f} "
                         f"{np.median(np.abs(e)):>14.3f} {np.median(e):>+10.3f}")
    text = "\n".join(lines)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.txt").write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
