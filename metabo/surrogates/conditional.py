"""The conditional kernel (thesis 5.4.1) and the imputation of inactive values (5.3.1).

Conditional kernel (eq. 5.9): ``k_C(x, x') = k(x, x')`` if x and x' lie in the same branch
of the condition tree (same group: same algorithm of a CASH space, or more generally the
same set of active hyperparameters), else 0. Sorted by group, ``K_C`` is block-diagonal
(eq. 5.10), its inverse and Cholesky factor are block-wise (eq. 5.11): the cost is
``O(sum_g n_g^3)`` instead of ``O(n^3)``, the log marginal likelihood is the sum of the
blocks', and a test point's prediction uses its own block only (a group with no data gets
the prior: mean m, variance sigma_a^2).

Hyperparameters are SHARED across blocks: one theta, the blocks' log marginal
likelihoods summed. The thesis wraps one ARD kernel k (eq. 5.9) and describes the model
as "training a different GP for each conditional subspace and sharing the same noise and
amplitude hyperparameters across all distinct GPs"; the lengthscales of k are shared too
(each block only informs the dimensions active in it; inactive ones are constant within
a block). Sharing pools the evidence, which matters when a branch has a handful of points.

Imputation: :meth:`metabo.space.cash.CASHSpace.encode` already imputes every inactive
coordinate with the encoding of its default (the other algorithms' blocks, and inactive
conditional children in the chosen block), the "default value" strategy of thesis 5.3.1
(Feurer et al. 2015). Within a group, inactive coordinates are then constant and drop out
of the kernel distance. :func:`impute_inactive` does the same for other encodings.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from metabo._typing import Seed
from metabo.exceptions import InputDataError
from metabo.surrogates.gp import GaussianProcess, GPHyperparameters


def impute_inactive(X: Any, active: Any, value: float | np.ndarray = 0.5) -> np.ndarray:
    """A copy of ``X`` (n, d) whose inactive coordinates (``active`` False, (n, d) bool)
    hold ``value`` (a scalar or one value per column, e.g. the default's encoding; 0.5 is
    the centre of [0, 1], SMAC's choice in thesis 5.5)."""
    A = np.array(X, dtype=float)
    mask = np.asarray(active, dtype=bool)
    if mask.shape != A.shape:
        raise InputDataError(f"active must have the shape of X {A.shape}, got {mask.shape}")
    fill = np.broadcast_to(np.asarray(value, dtype=float), A.shape)
    A[~mask] = fill[~mask]
    return A


def groups_from_active(active: Any) -> np.ndarray:
    """Group labels (n,) from active masks (n, d): equal masks, equal group (the same
    active conditions, thesis eq. 5.9); labels in order of first appearance."""
    mask = np.asarray(active, dtype=bool)
    if mask.ndim != 2:
        raise InputDataError(f"active must be a 2-d boolean array, got shape {mask.shape}")
    _, first, inverse = np.unique(mask, axis=0, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))
    return order[inverse.ravel()]


def cash_groups(n_algorithms: int, X: Any) -> np.ndarray:
    """Group of each CASH-encoded row of ``X``: the index of its algorithm (the arg max of
    the one-hot, the first ``n_algorithms`` = ``len(space)`` columns)."""
    A = np.asarray(X, dtype=float)
    if A.ndim != 2 or A.shape[1] < n_algorithms:
        raise InputDataError(f"X must be (n, D >= {n_algorithms}), got shape {A.shape}")
    return np.argmax(A[:, :n_algorithms], axis=1)


class ConditionalGP(GaussianProcess):
    """:class:`GaussianProcess` with the conditional kernel: zero covariance between
    points of different groups, block-wise Cholesky, shared hyperparameters.

    ``groups`` are labels (ints, e.g. :func:`cash_groups`); None puts every point in one
    group, which is the dense GP.
    """

    def fit(  # type: ignore[override]
        self, X: Any, y: Any, groups: Any = None, *, hyperparameters: GPHyperparameters | None = None
    ) -> ConditionalGP:
        """Fit to ``X`` (n, d), ``y`` (n,) with group labels ``groups`` (n,)."""
        self._fit(X, y, groups, hyperparameters)
        return self

    def predict(self, X: Any, groups: Any = None) -> tuple[np.ndarray, np.ndarray]:  # type: ignore[override]
        """Mean and variance of f at ``X`` (m, d) in groups ``groups`` (m,), y's units."""
        return self._predict(X, groups)

    def sample(  # type: ignore[override]
        self, X: Any, n_samples: int, seed: Seed = 0, groups: Any = None
    ) -> np.ndarray:
        """Joint posterior samples (n_samples, m); independent across groups."""
        return self._sample(X, n_samples, seed, groups)

    def add(self, x: Any, y: float, group: Any = 0) -> ConditionalGP:  # type: ignore[override]
        """One more observation in ``group``: only that block's factor grows (O(n_g^2))."""
        self._add(x, y, group)
        return self

    @property
    def block_sizes_(self) -> dict[Any, int]:
        """Number of training points in each group."""
        self._check_fitted()
        return {label: int(index.size) for label, index in self._index.items()}
