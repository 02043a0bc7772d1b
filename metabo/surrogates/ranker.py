"""A kernel rank-SVM: the latent ranker ``B`` of SCoT (Bardenet et al. 2013, sec. 3.1, 3.3).

Notation:

- ``Z`` (n, p): the training points ``z_i = (D_i, x_i)`` (dataset features and encoded
  hyperparameters); ``R`` (n,): their validation errors (lower is better); ``g`` (n,):
  their group (task).
- ``P = {(i, j): g_i = g_j, R_i < R_j}`` (n_P pairs): the preference pairs of eq. (2),
  only within a task, so that the scales of different tasks never meet; ties give no pair.
  ``b_p, w_p``: the better and the worse point of pair ``p``.
- ``k(z, z') = exp(-gamma ||z - z'||^2)``: the isotropic squared-exponential kernel the
  paper uses for its ranker (sec. 3.3); ``c_1..c_m`` (m, p): the kernel centres.
- ``phi(z) = k(z, c) K_cc^{-1/2}`` (m,): the Nystroem feature map on the centres
  (``K_cc = k(c, c)``), so ``<phi(z), phi(z')>`` is the kernel projected on the span of
  ``k(., c_1), .., k(., c_m)``; with every training point a centre, exactly ``k`` on them.
- ``f(z) = <w, phi(z)>``, ``w`` (m,): the latent ranker, *higher for worse points*, so that
  it is the function SCoT's GP regresses and EI minimizes, like an error. ``u = Phi w``
  (n,) its values at ``Z``; ``m_p = u_{w_p} - u_{b_p}`` the margin of pair ``p``.

Objective, SVMrank (Joachims 2002, the ranker SCoT uses) with the squared hinge:
``J(w) = 1/2 ||w||^2 + C sum_p max(0, 1 - m_p)^2``, gradient
``w - 2 C Phi^T (sum_p s_p (e_{w_p} - e_{b_p}))`` with ``s_p = max(0, 1 - m_p)`` (the
pair differences are never formed: scattering ``s`` onto the points costs O(n_P), the two
products with ``Phi`` O(n m)). It is minimized by scipy's L-BFGS-B from ``w = 0``.

Deviations from the paper (sec. 3.3 itself chose SVMrank over Chu and Ghahramani's GP
ranker for speed):

- the squared hinge (the L2-loss SVM) instead of SVMrank's hinge: a smooth, strongly
  convex primal (a unique ``w``) that a quasi-Newton method solves without a QP;
- the kernel expansion is restricted to at most ``n_components`` centres: the ``anchors``
  (for SCoT, every point of the tasks being tuned) and a seeded uniform draw of the other
  points (duplicate rows dropped); exact when every point fits;
- at most ``max_pairs_per_group`` pairs per task, drawn uniformly by index with a seeded
  generator and only then oriented by the errors (SVMrank takes every pair of a query;
  ~500 runs per task give 125,000 pairs each). The draw depends on the group sizes only,
  so the pairs, the centres and ``f`` are invariant to any increasing transform of one
  task's errors.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from metabo._typing import Seed, as_generator
from metabo.exceptions import InputDataError

logger = logging.getLogger(__name__)


class RankSVM:
    """Kernel rank-SVM with preference pairs within groups (module docstring).

    Args:
        C: weight of the squared hinge loss of each pair.
        gamma: the kernel's inverse squared lengthscale; ``"scale"``: ``1 / (p Var(Z))``
            (scikit-learn's SVC default; ``Var`` over every entry of ``Z``).
        n_components: at most this many kernel centres.
        max_pairs_per_group: pairs drawn per group (None: every pair).
        max_iter, tol: L-BFGS-B's iteration cap and projected-gradient tolerance.
        seed: seeds the pair draw and the centres.

    Attributes after :meth:`fit`: ``centres_`` (m, p), ``map_`` (the fitted scikit-learn
    ``Nystroem``), ``coef_`` (m,) ``w``, ``gamma_``, ``n_pairs_``, ``converged_``.
    """

    def __init__(self, *, C: float = 10.0, gamma: float | str = "scale", n_components: int = 300,
                 max_pairs_per_group: int | None = 300, max_iter: int = 1000, tol: float = 1e-5,
                 seed: Seed = 0) -> None:
        if not C > 0 or n_components < 1 or max_iter < 1 or not tol > 0:
            raise InputDataError(f"RankSVM needs C > 0, n_components >= 1, max_iter >= 1 and tol > 0; got C={C}, "
                                 f"n_components={n_components}, max_iter={max_iter}, tol={tol}")
        if max_pairs_per_group is not None and max_pairs_per_group < 1:
            raise InputDataError("max_pairs_per_group must be >= 1 or None (every pair)")
        if not (gamma == "scale" or (isinstance(gamma, (int, float)) and gamma > 0)):
            raise InputDataError(f"gamma must be 'scale' or a positive number, got {gamma!r}")
        self.C, self.gamma, self.n_components = float(C), gamma, n_components
        self.max_pairs_per_group, self.max_iter, self.tol, self.seed = max_pairs_per_group, max_iter, tol, seed

    def __repr__(self) -> str:
        return (f"RankSVM(C={self.C}, gamma={self.gamma!r}, n_components={self.n_components}, "
                f"max_pairs_per_group={self.max_pairs_per_group}, seed={self.seed!r})")

    def pairs(self, values: Any, groups: Any, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """``(better, worse)`` index arrays of the preference pairs ``P`` (eq. 2): within a
        group, at most ``max_pairs_per_group`` drawn by index, then oriented; ties dropped."""
        values, groups = np.asarray(values, dtype=float), np.asarray(groups)
        better, worse = [], []
        for g in np.unique(groups):
            idx = np.flatnonzero(groups == g)
            if len(idx) < 2:
                continue
            i, j = np.triu_indices(len(idx), k=1)
            if self.max_pairs_per_group is not None and len(i) > self.max_pairs_per_group:
                pick = np.sort(rng.choice(len(i), self.max_pairs_per_group, replace=False))
                i, j = i[pick], j[pick]
            a, b = idx[i], idx[j]
            keep = values[a] != values[b]
            a, b = a[keep], b[keep]
            swap = values[a] > values[b]
            better.append(np.where(swap, b, a))
            worse.append(np.where(swap, a, b))
        if not better:
            return np.empty(0, dtype=np.intp), np.empty(0, dtype=np.intp)
        return np.concatenate(better), np.concatenate(worse)

    def _centres(self, Z: np.ndarray, anchors: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Indices of the kernel centres: anchors first, then a seeded draw; no duplicate rows."""
        _, first = np.unique(Z, axis=0, return_index=True)
        distinct = np.zeros(len(Z), dtype=bool)
        distinct[first] = True
        anchored = np.flatnonzero(anchors & distinct)
        others = np.flatnonzero(~anchors & distinct)
        m = self.n_components
        if len(anchored) >= m:
            return np.sort(rng.choice(anchored, m, replace=False))
        fill = rng.choice(others, min(m - len(anchored), len(others)), replace=False)
        return np.sort(np.concatenate([anchored, fill]))

    def fit(self, Z: Any, values: Any, groups: Any, *, anchors: Any = None) -> RankSVM:
        """Learn ``f`` from points ``Z`` (n, p), their ``values`` (n,) and ``groups`` (n,);
        ``anchors``: a boolean mask (n,) of points that are always kernel centres."""
        Z = np.asarray(Z, dtype=float)
        values = np.asarray(values, dtype=float)
        groups = np.asarray(groups)
        if Z.ndim != 2 or len(Z) != len(values) or len(values) != len(groups):
            raise InputDataError(f"Z (n, p), values (n,) and groups (n,) must agree; got {Z.shape}, "
                                 f"{values.shape}, {groups.shape}")
        if not (np.all(np.isfinite(Z)) and np.all(np.isfinite(values))):
            raise InputDataError("the ranker needs finite points and values (impute failures first)")
        anchors = np.zeros(len(Z), dtype=bool) if anchors is None else np.asarray(anchors, dtype=bool)
        if anchors.shape != (len(Z),):
            raise InputDataError(f"anchors must be a boolean mask of the {len(Z)} points, got shape {anchors.shape}")
        rng = as_generator(self.seed)
        better, worse = self.pairs(values, groups, rng)
        if len(better) == 0:
            raise InputDataError("no preference pair: every group has fewer than two distinct values")
        from scipy.optimize import minimize
        from sklearn.kernel_approximation import Nystroem

        gamma = self.gamma
        if gamma == "scale":
            var = float(Z.var())
            gamma = 1.0 / (Z.shape[1] * var) if var > 0 else 1.0
        self.gamma_ = float(gamma)
        centres = self._centres(Z, anchors, rng)
        self.centres_ = Z[centres]
        # every centre is a component: Nystroem only permutes them (seeded)
        self.map_ = Nystroem(kernel="rbf", gamma=self.gamma_, n_components=len(centres), random_state=0).fit(
            self.centres_)
        Phi = self.map_.transform(Z)
        PhiT = np.ascontiguousarray(Phi.T)
        n, C = len(Z), self.C

        def objective(w: np.ndarray) -> tuple[float, np.ndarray]:
            u = Phi @ w
            s = np.maximum(0.0, 1.0 - (u[worse] - u[better]))  # s_p = max(0, 1 - m_p)
            scatter = np.bincount(worse, s, n) - np.bincount(better, s, n)
            return 0.5 * float(w @ w) + C * float(s @ s), w - 2.0 * C * (PhiT @ scatter)

        res = minimize(objective, np.zeros(Phi.shape[1]), jac=True, method="L-BFGS-B",
                       options={"maxiter": self.max_iter, "gtol": self.tol})
        if not res.success:
            logger.warning("RankSVM: L-BFGS-B stopped before convergence (%s); raise max_iter or lower C", res.message)
        self.coef_ = res.x
        self.n_pairs_ = len(better)
        self.converged_ = bool(res.success)
        return self

    def predict(self, Z: Any) -> np.ndarray:
        """The latent ``f(Z)`` (m,) (higher = worse)."""
        if not hasattr(self, "coef_"):
            raise InputDataError("fit the ranker before predicting")
        Z = np.asarray(Z, dtype=float)
        if Z.ndim != 2 or Z.shape[1] != self.centres_.shape[1]:
            raise InputDataError(f"Z must be (m, {self.centres_.shape[1]}), got {Z.shape}")
        return self.map_.transform(Z) @ self.coef_


__all__ = ["RankSVM"]
