"""A kernel rank-SVM: the latent ranker of SCoT (Bardenet et al. 2013, sec. 3.1 and 3.3).

Notation: points ``z_i`` (n, p) (dataset features and encoded hyperparameters), each in a
group ``g_i`` (its task), with values ``R_i`` (validation error, lower is better). The
preference pairs are ``P = {(i, j): g_i = g_j, R_i < R_j}`` (eq. 2: rankings only within
a task, so scales across tasks never matter). SVMrank (Joachims 2002) with a kernel
``k`` learns ``f(z) = <w, phi(z)>`` minimizing
``1/2 ||w||^2 + C sum_{(i,j) in P} max(0, 1 - <w, phi(z_j) - phi(z_i)>)^2``:
``f`` is higher for worse points (the target SCoT's GP then regresses and EI minimizes).

Deviations, both for speed, as SCoT itself did (sec. 3.3: "we chose to limit ourselves ...
to an isotropic squared exponential kernel, and used the efficient optimization routines
available for SVMrank"):

- the isotropic SE kernel ``k(z, z') = exp(-gamma ||z - z'||^2)`` is approximated by a
  seeded Nystroem map ``phi`` with ``n_components`` landmarks (scikit-learn), so the
  problem becomes a linear rank-SVM on pair differences ``phi(z_j) - phi(z_i)``, solved in
  the primal (smooth with the squared hinge) by scipy's L-BFGS-B with its analytic gradient
  ``w - 2 C D^T max(0, 1 - D w)``;
- at most ``max_pairs_per_group`` pairs per task, drawn uniformly with a seeded generator
  (by index, then oriented by value, so the pairs only depend on the orderings).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from metabo._typing import Seed, as_generator
from metabo.exceptions import InputDataError


class RankSVM:
    """Kernel rank-SVM with pairs within groups (module docstring).

    Args:
        C: the hinge loss weight.
        gamma: the SE kernel's inverse squared lengthscale (``"scale"``: ``1 / (p Var(z))``
            as scikit-learn's SVC).
        n_components: Nystroem landmarks (at most the number of points).
        max_pairs_per_group: pairs drawn per group (None: every pair).
        seed: seeds the landmarks and the pairs.
    """

    def __init__(self, *, C: float = 10.0, gamma: float | str = "scale", n_components: int = 300,
                 max_pairs_per_group: int | None = 300, seed: Seed = 0) -> None:
        if C <= 0 or n_components < 1:
            raise InputDataError("C > 0 and n_components >= 1 are required")
        self.C, self.gamma, self.n_components = C, gamma, n_components
        self.max_pairs_per_group, self.seed = max_pairs_per_group, seed

    def pairs(self, values: np.ndarray, groups: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``(better, worse)`` index arrays of the preference pairs (module docstring)."""
        better, worse = [], []
        for g in np.unique(groups):
            idx = np.flatnonzero(groups == g)
            if len(idx) < 2:
                continue
            i, j = np.triu_indices(len(idx), k=1)
            if self.max_pairs_per_group is not None and len(i) > self.max_pairs_per_group:
                pick = rng.choice(len(i), self.max_pairs_per_group, replace=False)
                i, j = i[pick], j[pick]
            a, b = idx[i], idx[j]
            keep = values[a] != values[b]
            a, b = a[keep], b[keep]
            swap = values[a] > values[b]
            better.append(np.where(swap, b, a))
            worse.append(np.where(swap, a, b))
        if not better:
            return np.empty(0, dtype=int), np.empty(0, dtype=int)
        return np.concatenate(better), np.concatenate(worse)

    def fit(self, Z: Any, values: Any, groups: Any) -> RankSVM:
        """Learn ``f`` from points ``Z`` (n, p), their ``values`` and ``groups``."""
        Z = np.asarray(Z, dtype=float)
        values = np.asarray(values, dtype=float)
        groups = np.asarray(groups)
        if Z.ndim != 2 or len(Z) != len(values) or len(values) != len(groups):
            raise InputDataError(f"Z (n, p), values (n,) and groups (n,) must agree; got {Z.shape}, "
                                 f"{values.shape}, {groups.shape}")
        if not (np.all(np.isfinite(Z)) and np.all(np.isfinite(values))):
            raise InputDataError("the ranker needs finite points and values")
        rng = as_generator(self.seed)
        better, worse = self.pairs(values, groups, rng)
        if len(better) == 0:
            raise InputDataError("no preference pair: every group has fewer than two distinct values")
        from sklearn.kernel_approximation import Nystroem

        gamma = self.gamma
        if gamma == "scale":
            var = float(Z.var())
            gamma = 1.0 / (Z.shape[1] * var) if var > 0 else 1.0
        self.map_ = Nystroem(kernel="rbf", gamma=float(gamma), n_components=min(self.n_components, len(Z)),
                             random_state=int(rng.integers(2**31 - 1))).fit(Z)
        phi = self.map_.transform(Z)
        D = phi[worse] - phi[better]  # f(worse) - f(better) should be >= 1
        C = self.C

        def objective(w: np.ndarray) -> tuple[float, np.ndarray]:
            slack = np.maximum(0.0, 1.0 - D @ w)
            return 0.5 * float(w @ w) + C * float(slack @ slack), w - 2.0 * C * (D.T @ slack)

        from scipy.optimize import minimize

        res = minimize(objective, np.zeros(D.shape[1]), jac=True, method="L-BFGS-B",
                       options={"maxiter": 500, "gtol": 1e-5})
        self.w_ = res.x
        self.n_pairs_ = len(D)
        return self

    def predict(self, Z: Any) -> np.ndarray:
        """The latent ``f(Z)`` (higher = worse)."""
        if not hasattr(self, "w_"):
            raise InputDataError("fit the ranker first")
        return self.map_.transform(np.asarray(Z, dtype=float)) @ self.w_


__all__ = ["RankSVM"]
