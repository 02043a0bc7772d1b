"""OBOE's model selection (Yang, Akimoto, Kim & Udell 2019, KDD), reimplemented as a
strategy: the anchor for "choose configurations for a new dataset from a meta-dataset".

OBOE (sec. 3; ``oboe`` 0.2.0, ``auto_learner.py`` ``_fit`` with ``method="Oboe"``,
``linalg.py``, ``experiment_design.py``):

1. The error matrix ``E`` (past tasks x configurations, dense) is approximated by
   rank-``k`` PCA, ``E ~ X^T Y`` with ``Y`` the top ``k`` right singular vectors
   (``linalg.pca``), ``k`` the number of singular values at least ``threshold`` times the
   largest (``approx_matrix_rank(E, threshold=0.01)``, ``_fit``'s default).
2. Experiment design (``selection_method="ED"``, D-optimal): the configurations to
   evaluate first on the new task are the columns ``S`` maximizing
   ``log det(sum_{i in S} y_i y_i^T)`` under a runtime budget (a quarter of ``_fit``'s).
3. The new task's latent vector is the least-squares fit on the evaluated columns,
   ``x = argmin ||Y_S^T x - e_S||`` (``linalg.impute``), and every other column is
   predicted as ``x^T y_j``; the candidates are then fitted in increasing order of the
   prediction (``for i in np.argsort(self.new_row[0])``).

Here, one trial at a time: the first ``n_design`` trials are the design, then each trial
is the unevaluated column of lowest predicted value, the latent vector refitted on every
completed trial at a column (failures as the worst observed value, :attr:`History.y`).

Deviations, each because the setting differs: the design has unit costs and
``n_design`` trials (OBOE's counts seconds: ``t_predicted`` against ``runtime_limit/4``)
and is built greedily (add the column of largest ``y_i^T M^{-1} y_i``, ``M = eps I +
sum_S y_i y_i^T``: the largest gain in ``log det``), as OBOE's own TensorOboe design
(``greedy_stepwise_selection_with_time``) does, instead of OBOE's convex relaxation
rounded at ``v > 0.9``; OBOE's runtime doubling and its final ensemble are left out
(the benchmarks score each trial's validation error); columns missing on a past task
(``E`` from a sparse past) are filled with the column mean before the PCA, as OBOE's
error matrix has none. When every column is evaluated, or none is in the space, random
configurations follow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from metabo.exceptions import InputDataError
from metabo.kb.past import PastRuns
from metabo.space.cash import CASHSpace
from metabo.strategies.base import Config, random_configuration

if TYPE_CHECKING:
    from metabo.optimizer.history import History
    from metabo.strategies.portfolio import RegretMatrix


def approx_rank(E: np.ndarray, threshold: float) -> int:
    """The number of singular values of ``E`` at least ``threshold`` times the largest."""
    s = np.linalg.svd(E, compute_uv=False)
    return max(1, int((s >= threshold * s[0]).sum())) if s.size and s[0] > 0 else 1


def d_optimal_order(Y: np.ndarray, n: int, eps: float = 1e-6) -> list[int]:
    """``n`` columns of ``Y`` (k, C) chosen greedily for ``log det(eps I + sum y_i y_i^T)``:
    each step the column of largest ``y_i^T M^{-1} y_i`` (module docstring)."""
    k, C = Y.shape
    M = eps * np.eye(k)
    chosen: list[int] = []
    free = np.ones(C, dtype=bool)
    for _ in range(min(n, C)):
        L = np.linalg.cholesky(M)
        Z = np.linalg.solve(L, Y)  # M^{-1/2}-whitened columns
        score = np.where(free, (Z ** 2).sum(axis=0), -np.inf)
        j = int(np.argmax(score))
        chosen.append(j)
        free[j] = False
        M = M + np.outer(Y[:, j], Y[:, j])
    return chosen


class OBOESelection:
    """OBOE's selection step over the past's recorded configurations (module docstring).

    Args:
        past: the past runs (other tasks only), e.g. OBOE's meta-dataset.
        n_design: trials of the experiment design before the predicted-best ones.
        threshold: the PCA rank's relative singular-value threshold (OBOE: 0.01).
    """

    name = "oboe"

    def __init__(self, past: PastRuns, *, n_design: int = 5, threshold: float = 0.01) -> None:
        if n_design < 1 or not 0 < threshold < 1:
            raise InputDataError("n_design must be >= 1 and threshold in (0, 1)")
        if not past.tasks:
            raise InputDataError("no past task to select configurations from")
        self.past, self.n_design, self.threshold = past, n_design, threshold
        self._fitted: tuple[CASHSpace, RegretMatrix, np.ndarray, list[int]] | None = None

    def __repr__(self) -> str:
        return f"OBOESelection(tasks={len(self.past.tasks)}, n_design={self.n_design}, threshold={self.threshold})"

    def model(self, space: CASHSpace) -> tuple[RegretMatrix, np.ndarray, list[int]]:
        """The past's matrix in ``space``, ``Y`` (k, C) and the design order (built once)."""
        if self._fitted is None or self._fitted[0] is not space:
            from metabo.strategies.portfolio import RegretMatrix

            m = RegretMatrix.from_past(self.past, space)
            E = np.array(m.values, dtype=float)
            E = np.where(np.isnan(E), np.nanmean(E, axis=0, keepdims=True), E)
            k = approx_rank(E, self.threshold)
            _, _, vt = np.linalg.svd(E, full_matrices=False)
            Y = vt[:k]
            self._fitted = (space, m, Y, d_optimal_order(Y, self.n_design))
        return self._fitted[1], self._fitted[2], self._fitted[3]

    def predict(self, history: History, space: CASHSpace) -> np.ndarray:
        """The predicted value of every column from the completed trials at columns
        (``x = lstsq(Y_S^T, e_S)``, ``x^T Y``); NaN before any."""
        m, Y, _ = self.model(space)
        index = {cid: j for j, cid in enumerate(m.ids)}
        y = history.y
        pairs = [(index[r.config_id], v) for r, v in zip(history.completed, y) if r.config_id in index]
        if not pairs:
            return np.full(len(m.ids), np.nan)
        cols, vals = (np.array(x) for x in zip(*pairs))
        x = np.linalg.lstsq(Y[:, cols.astype(int)].T, vals.astype(float), rcond=None)[0]
        return x @ Y

    def suggest(self, history: History, space: CASHSpace, rng: np.random.Generator) -> Config:
        """The next design configuration not yet asked; after the design, the unasked candidate
        of lowest predicted error; random if every candidate was asked."""
        m, _, design = self.model(space)
        asked = history.config_ids
        for j in design:
            if m.ids[j] not in asked:
                return m.configs[j][0], dict(m.configs[j][1])
        predicted = self.predict(history, space)
        free = np.array([cid not in asked for cid in m.ids])
        if free.any():
            j = int(np.argmin(np.where(free, np.nan_to_num(predicted, nan=np.inf), np.inf)))
            if free[j]:
                return m.configs[j][0], dict(m.configs[j][1])
        return random_configuration(space, rng, asked)


__all__ = ["OBOESelection", "approx_rank", "d_optimal_order"]
