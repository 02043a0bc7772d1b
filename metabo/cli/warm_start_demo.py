"""The end of ``metabo quickstart``: the default warm start (``warm``) of a dataset beside a
cold-start GP-BO on the same budget, over several seeds (each seed its own split,
estimators and suggestions), live, printed as a table of the mean and the spread over the
seeds and drawn as a plot with the spread shaded: one lucky seed does not make the case."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from metabo.kb.store import KnowledgeBase

#: Algorithms that train in about a second on a few thousand rows.
FAST_ALGORITHMS = ("knn", "svm_rbf", "linear_svm", "logistic_regression", "decision_tree", "lda", "qda",
                   "gaussian_nb")
#: The demo's two sides: label -> strategy name (:func:`metabo.tuning.tune`).
SIDES = {"warm start": "warm", "cold GP-BO": "gp"}


def warm_vs_cold(kb: KnowledgeBase, spec: str, *, budget: int = 15, seeds: Sequence[int] = (0, 1, 2),
                 plot_path: Path | None = None) -> dict[str, np.ndarray]:
    """Tune ``spec`` with the default warm start (every other stored task's runs; the
    dataset's own earlier runs left out) and with cold GP-BO, once per seed in ``seeds``;
    print the mean and the min-max over seeds of the best validation error after each
    evaluation, and the test errors; every session is stored. Returns label -> the
    best-so-far curves, (n_seeds, budget)."""
    from metabo.kb.past import PastRuns
    from metabo.space.algorithms import default_cash_space
    from metabo.tuning import tune

    past = PastRuns.from_kb(kb)
    algorithms = [a for a in FAST_ALGORITHMS if a in past.algorithms]
    space = default_cash_space(algorithms)
    print(f"\nWarm start vs cold start on {spec}: {budget} live evaluations each over {len(algorithms)} fast "
          f"algorithms, seeds {list(seeds)} (each seed its own split, estimators and suggestions)")
    curves: dict[str, list[list[float]]] = {label: [] for label in SIDES}
    tests: dict[str, list[float]] = {label: [] for label in SIDES}
    for seed in seeds:
        for label, name in SIDES.items():
            result = tune(spec, budget=budget, space=space, strategy=name, kb=kb, seed=seed, meta_features=False,
                          keep_predictions=False)
            if name == "warm" and seed == seeds[0]:
                from metabo.tuning.registry import resolve_strategy

                print(f"  {label}: {resolve_strategy('auto', kb, result.dataset_id, space, metric='error_rate')[1]}")
            curves[label].append(np.minimum.accumulate(result.history.y).tolist())
            tests[label].append(np.nan if result.test_error is None else float(result.test_error))
    arrays = {label: np.asarray(c, dtype=float) for label, c in curves.items()}
    _print_table(arrays, tests, budget)
    if plot_path is not None:
        _plot(arrays, spec, plot_path)
        print(f"plot: {plot_path}")
    return arrays


def _print_table(curves: dict[str, np.ndarray], tests: dict[str, list[float]], budget: int) -> None:
    labels = list(curves)
    print(f"{'evaluation':>10s}" + "".join(f"{lab:>26s}" for lab in labels)
          + "   (best validation error so far: mean [min, max] over seeds)")
    for i in range(budget):
        if i < 5 or (i + 1) % 5 == 0:
            cells = (f"{c[:, i].mean():.4f} [{c[:, i].min():.4f}, {c[:, i].max():.4f}]" for c in curves.values())
            print(f"{i + 1:>10d}" + "".join(f"{cell:>26s}" for cell in cells))
    cells = (f"{np.nanmean(t):.4f} [{np.nanmin(t):.4f}, {np.nanmax(t):.4f}]" for t in tests.values())
    print(f"{'test':>10s}" + "".join(f"{cell:>26s}" for cell in cells)
          + "   (test error of each selected configuration)")
    ahead = {i: int(np.sum(curves[labels[0]][:, i] < curves[labels[1]][:, i])) for i in range(budget)}
    n = len(next(iter(curves.values())))
    print(f"{labels[0]} strictly ahead of {labels[1]} in " + ", ".join(
        f"{ahead[i]}/{n} seeds at {i + 1}" for i in (0, 2, 4, budget - 1) if i < budget))


def _plot(curves: dict[str, np.ndarray], spec: str, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.6))
    for label, c in curves.items():
        x = np.arange(1, c.shape[1] + 1)
        (line,) = ax.plot(x, c.mean(axis=0), marker="o", ms=3, label=f"{label} (mean of {len(c)} seeds)")
        ax.fill_between(x, c.min(axis=0), c.max(axis=0), color=line.get_color(), alpha=0.2, lw=0)
    ax.set(xlabel="evaluation", ylabel="best validation error so far",
           title=f"{spec}: warm vs cold start (band: min to max over seeds)")
    ax.legend()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=130)
    plt.close(fig)
