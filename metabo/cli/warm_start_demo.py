"""The end of ``metabo quickstart``: a warm-started tuning (RLGP) of a dataset beside a
cold-start GP-BO on the same budget, live, printed as a table and drawn as a plot."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from metabo.kb.store import KnowledgeBase

#: Algorithms that train in about a second on a few thousand rows.
FAST_ALGORITHMS = ("knn", "svm_rbf", "linear_svm", "logistic_regression", "decision_tree", "lda", "qda",
                   "gaussian_nb")


def warm_vs_cold(kb: KnowledgeBase, spec: str, *, budget: int = 15, seed: int = 0,
                 plot_path: Path | None = None) -> dict[str, list[float]]:
    """Tune ``spec`` with RLGP (warm: every other stored task's runs) and with GP-BO (cold);
    print the best validation error after each evaluation and the final test errors; both
    sessions are stored. Returns the best-so-far curves."""
    from metabo.kb.past import PastRuns
    from metabo.optimizer import tune
    from metabo.space.algorithms import default_cash_space
    from metabo.strategies import GPBO
    from metabo.strategies.rlgp import RLGP
    from metabo.surrogates.bank import SurrogateBank, space_encoder

    past = PastRuns.from_kb(kb)
    algorithms = [a for a in FAST_ALGORITHMS if a in past.algorithms]
    space = default_cash_space(algorithms)
    from metabo.data.loaders import load_dataset

    target_fp = load_dataset(spec).fingerprint
    same = kb.query("SELECT dataset_id FROM datasets WHERE fingerprint = ?", [target_fp])["dataset_id"].tolist()
    past = past.without(same).only(algorithms=algorithms)  # the dataset's own runs (an earlier demo) are not past
    bank = SurrogateBank.fit(past, space_encoder(space), kb=kb)
    print(f"\nWarm start vs cold start on {spec}: {budget} live evaluations each over "
          f"{len(algorithms)} fast algorithms (seed {seed}); RLGP transfers from {len(bank.tasks)} stored tasks")
    curves, tests = {}, {}
    for label, strategy in (("RLGP (warm)", RLGP(bank, seed=seed)),
                            ("GP-BO (cold)", GPBO(n_init=3, seed=seed))):
        result = tune(spec, budget=budget, space=space, strategy=strategy, kb=kb, seed=seed, meta_features=False,
                      keep_predictions=False)
        curves[label] = np.minimum.accumulate(result.history.y).tolist()
        tests[label] = result.test_error
    labels = list(curves)
    print(f"{'evaluation':>10s}" + "".join(f"{lab:>16s}" for lab in labels) + "   (best validation error so far)")
    for i in range(budget):
        if i < 5 or (i + 1) % 5 == 0:
            print(f"{i + 1:>10d}" + "".join(f"{curves[lab][i]:>16.4f}" for lab in labels))
    print(f"{'test':>10s}" + "".join(f"{(tests[lab] if tests[lab] is not None else float('nan')):>16.4f}"
                                     for lab in labels) + "   (test error of each selected configuration)")
    if plot_path is not None:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 3.6))
        for lab in labels:
            ax.plot(range(1, budget + 1), curves[lab], marker="o", ms=3, label=lab)
        ax.set(xlabel="evaluation", ylabel="best validation error so far", title=f"{spec}: warm vs cold start")
        ax.legend()
        fig.tight_layout()
        plot_path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(plot_path, dpi=130)
        plt.close(fig)
        print(f"plot: {plot_path}")
    return curves
