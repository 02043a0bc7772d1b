"""The new task's row of the past tasks' matrix as a conditional Gaussian: which recorded
configuration to try next, given the new task's results so far.

Notation of :mod:`metabo.strategies.portfolio`: past tasks ``p``, recorded configurations
(columns) ``c``, normalized regrets ``Q_{p,c}`` (NaN where not run), task weights ``w_p``.

1. Scores. Each past row becomes normal scores of its ranks,
   ``F_{p,c} = Phi^{-1}((rank_p(c) + 1/2) / n_p)`` over the ``n_p`` columns ``p`` recorded
   (a column it did not record takes the column's mean score). Ranks make a task where every
   configuration is within .01 and one where they span .30 count alike, and keep a few
   failed configurations (regret 1) from dominating the covariance.
2. Prior over the new task's scores ``f``: ``f ~ N(mu, K)``, ``mu = sum_p w_p F_p``,
   ``K = sum_p w_p (F_p - mu)(F_p - mu)^T + lambda kbar I`` (``kbar`` the mean of the
   weighted variances, ``lambda`` :data:`SHRINKAGE`): the weighted sample covariance of the
   past rows (rank at most ``P - 1``), shrunk towards its diagonal so that two columns no
   past task separates are not taken for one.
3. Link. The new task's values ``v_i`` at columns ``o`` are ``v = a + b f_o`` with ``a, b``
   the least-squares fit of ``v`` on ``mu_o`` (``b > 0``; otherwise the moments of ``v``
   and ``mu_o`` are matched), so ``f_o = (v - a) / b``.
4. Posterior and choice: ``m = mu + K_{:o} K_oo^{-1} (f_o - mu_o)``, ``s^2 = diag(K - K_{:o}
   K_oo^{-1} K_{o:})``; the next column is the unasked one of largest expected improvement
   below ``min f_o`` (:func:`metabo.acquisition.ei.log_expected_improvement`).

This is the Gaussian reading of probabilistic matrix factorization for AutoML (Fusi,
Sheth & Elibol 2018, sec. 3: a new task's row predicted from its observed entries through
the columns' joint distribution learned on past tasks, then EI over the columns), with the
latent GP-LVM kernel replaced by the (weighted, shrunk) sample covariance of the past rows:
nothing is trained, so it costs ``O(P C n)`` per pick, and the task weights of the portfolio
(meta-features and the agreement of the new task's results) weight the past rows. Where the
portfolio's gain asks "which configuration was best on tasks like this one", the column
model also asks "which configurations go with the ones that did well *here*": with the new
task's own results it moves to configurations that past tasks rank alike to its best so far.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

#: ``lambda`` of the module docstring: the share of the mean variance added to the diagonal.
SHRINKAGE = 0.1


def normal_scores(Q: np.ndarray) -> np.ndarray:
    """``F_{p,c}`` of the module docstring (P, C): each row's ranks as normal quantiles, NaN
    where ``Q`` is NaN (ties ranked in column order)."""
    Q = np.asarray(Q, dtype=float)
    F = np.full_like(Q, np.nan)
    for p, row in enumerate(Q):
        seen = np.isfinite(row)
        n = int(seen.sum())
        if n:
            ranks = np.argsort(np.argsort(row[seen], kind="stable"), kind="stable")
            F[p, seen] = norm.ppf((ranks + 0.5) / n)
    return F


def column_posterior(F: np.ndarray, w: np.ndarray, observed: np.ndarray, values: np.ndarray,
                     shrinkage: float = SHRINKAGE) -> tuple[np.ndarray, np.ndarray, float]:
    """The posterior mean and variance of every column's score, and the best observed
    score (module docstring, steps 2-4).

    Args:
        F: the past tasks' scores (P, C), NaN where not recorded (:func:`normal_scores`).
        w: task weights (P,), summing to 1.
        observed: the columns the new task has values at (n,), distinct.
        values: its values there (n,), lower is better.
    """
    F = np.asarray(F, dtype=float)
    w = np.asarray(w, dtype=float)
    o = np.asarray(observed, dtype=int)
    v = np.asarray(values, dtype=float)
    col_mean = np.nanmean(np.where(np.isfinite(F), F, np.nan), axis=0)
    col_mean = np.nan_to_num(col_mean, nan=0.0)
    F = np.where(np.isfinite(F), F, col_mean[None, :])
    mu = w @ F
    Fc = (F - mu) * np.sqrt(w)[:, None]
    var = (Fc**2).sum(axis=0)
    jitter = shrinkage * max(float(var.mean()), 1e-12)
    K_o = Fc.T @ Fc[:, o]  # (C, n)
    K_o[o, np.arange(len(o))] += jitter
    prior_var = var + jitter
    f_o = _link(v, mu[o])
    K_oo = K_o[o]
    L = np.linalg.cholesky(K_oo + 1e-9 * np.eye(len(o)))
    alpha = np.linalg.solve(L.T, np.linalg.solve(L, f_o - mu[o]))
    m = mu + K_o @ alpha
    V = np.linalg.solve(L, K_o.T)
    return m, np.maximum(prior_var - (V**2).sum(axis=0), 1e-12), float(f_o.min())


def _link(v: np.ndarray, mu_o: np.ndarray) -> np.ndarray:
    """``f_o = (v - a) / b`` of step 3 (module docstring)."""
    if len(v) >= 2 and np.ptp(mu_o) > 0:
        b, a = np.polyfit(mu_o, v, 1)
    else:
        b = a = 0.0
    if not b > 1e-12:
        sv, sm = float(np.std(v)), float(np.std(mu_o))
        b = sv / sm if sv > 0 and sm > 0 else 1.0
        a = float(np.mean(v)) - b * float(np.mean(mu_o))
    return (v - a) / b


__all__ = ["SHRINKAGE", "column_posterior", "normal_scores"]
