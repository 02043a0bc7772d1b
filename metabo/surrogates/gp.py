"""Gaussian-process regression with a constant mean, an ARD kernel and Gaussian noise.

Notation (thesis 2.1, 2.4, 5.2): training inputs ``X`` (n, d) in [0, 1]^d, targets ``y``
(n,); standardized targets ``z = (y - ybar) / s`` (``s`` the population std, 1 if y is
constant); test inputs ``X*`` (m, d). In standardized units the model is
``z = f(x) + eps``, ``f ~ GP(m, sigma_a^2 k(x, x'; l))``, ``eps ~ N(0, nu)``, and

- ``K = sigma_a^2 k(X, X) + nu I = L L^T`` (Cholesky, adaptive jitter),
  ``alpha = K^-1 (z - m 1)``;
- mean ``mu(x*) = m + k*^T alpha`` (eq. 2.6 / 5.3 with the constant mean),
  variance ``v(x*) = sigma_a^2 - ||L^-1 k*||^2`` (eq. 2.7 / 5.4, latent f, no noise);
- log marginal likelihood (eq. 2.16)
  ``log p(z | X, theta) = -1/2 (z - m)^T alpha - sum_i log L_ii - n/2 log 2 pi``,
  and its gradient (Rasmussen & Williams eq. 5.9)
  ``d/dtheta_j = 1/2 tr((alpha alpha^T - K^-1) dK/dtheta_j)``, ``d/dm = 1^T alpha``.

The likelihood and its gradient live in :mod:`metabo.surrogates.likelihood`.
Hyperparameters ``theta = [log l (d), log sigma_a^2, log nu, m]`` (standardized units),
set by maximizing ``log p(z | X, theta) + log p(theta)`` (priors in
:mod:`metabo.surrogates.priors`) with L-BFGS-B and analytic gradients from a default start
plus ``n_restarts`` seeded random starts, or by slice sampling (thesis eq. 2.17; predictions
are then averaged over the samples). :class:`GPHyperparameters` holds them in y's units.

The same code runs the conditional GP (thesis 5.4.1): the training set is partitioned in
blocks (groups), K is block-diagonal, every quantity above is a sum over blocks.
:class:`GaussianProcess` has one block; :class:`metabo.surrogates.conditional.ConditionalGP`
exposes the groups.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import time
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
from scipy.linalg import cho_solve, solve_triangular
from scipy.optimize import minimize
from threadpoolctl import ThreadpoolController

from metabo._typing import Seed, as_generator
from metabo.exceptions import InputDataError, SurrogateError
from metabo.surrogates.gp_state import Block, GPHyperparameters, Posterior, PosteriorState
from metabo.surrogates.kernels import Kernel, get_kernel
from metabo.surrogates.likelihood import block_log_likelihood, cholesky_jitter, masked_log_likelihood, unpack_theta
from metabo.surrogates.priors import GPPriors
from metabo.surrogates.slice_sampling import slice_sample

logger = logging.getLogger(__name__)

#: Bounds (standardized y, inputs in [0, 1]^d) of the lengthscales, the signal variance,
#: the noise variance (its lower end is the noise floor) and the constant mean.
LENGTHSCALE_BOUNDS = (1e-3, 1e3)
AMPLITUDE_BOUNDS = (1e-3, 1e2)
NOISE_BOUNDS = (1e-6, 10.0)
MEAN_BOUNDS = (-10.0, 10.0)
#: L-BFGS-B tolerances (relative decrease of the negative log posterior): final run, restarts.
FTOL, FTOL_RESTARTS = 1e-8, 1e-4
#: A warm start's noise variance is raised to at least this (standardized units).
WARM_NOISE_MIN = 1e-3
#: Up to this many training rows, the blocks' likelihood is computed as one masked
#: n x n factorization (:func:`~metabo.surrogates.likelihood.masked_log_likelihood`);
#: above it, block by block (O(sum n_g^3) beats O(n^3) once n is large).
JOINT_MAX_ROWS = 256


_F = TypeVar("_F", bound=Callable[..., Any])


def _blas_limited(method: _F) -> _F:
    """Run ``method`` with BLAS limited to ``self.blas_threads`` threads: GP fits are many small
    factorizations, for which one thread beats a pool (and leaves the cores to other processes)."""

    @functools.wraps(method)
    def wrapper(self: GaussianProcess, *args: Any, **kwargs: Any) -> Any:
        with self._blas_context():
            return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


class GaussianProcess:
    """GP regression: constant mean, ARD kernel, Gaussian noise (module docstring).

    ``kernel``: ``"matern52"`` (default), ``"laplace"`` (thesis 5.4.2), ``"matern12"`` or a
    :class:`~metabo.surrogates.kernels.Kernel`. ``noise``: None to learn it (floor
    ``NOISE_BOUNDS[0]`` of the standardized variance) or a fixed noise variance in y's units.
    ``optimizer``: ``"mll"`` (MAP by L-BFGS-B, ``n_restarts`` random starts besides the
    default one) or ``"slice"`` (``n_samples`` slice samples after ``n_burn`` sweeps from the
    MAP). ``priors``: :class:`GPPriors` (default: the thesis' priors). ``blas_threads``:
    BLAS threads while the GP computes (None: leave BLAS as it is).
    """

    # set by fit (declared for the type checker)
    _theta_map: np.ndarray
    _data_cache: list[tuple[np.ndarray, np.ndarray]] | None

    def __init__(
        self,
        kernel: str | Kernel = "matern52",
        *,
        noise: float | None = None,
        optimizer: str = "mll",
        n_restarts: int = 2,
        n_samples: int = 10,
        n_burn: int = 20,
        priors: GPPriors | None = None,
        blas_threads: int | None = 1,
        seed: Seed = 0,
    ) -> None:
        if optimizer not in ("mll", "slice"):
            raise InputDataError(f"optimizer must be 'mll' or 'slice', got {optimizer!r}")
        if noise is not None and not (np.isfinite(noise) and noise >= 0):
            raise InputDataError(f"noise must be a non-negative variance or None, got {noise!r}")
        if n_restarts < 0 or n_samples < 1 or n_burn < 0:
            raise InputDataError("n_restarts and n_burn must be >= 0 and n_samples >= 1")
        self.kernel = kernel
        self.noise = noise
        self.optimizer = optimizer
        self.n_restarts = n_restarts
        self.n_samples = n_samples
        self.n_burn = n_burn
        self.priors = priors
        self.blas_threads = blas_threads
        self.seed = seed
        self._kernel = get_kernel(kernel)
        self._posteriors: list[Posterior] = []
        self._controller: ThreadpoolController | None = None
        self._joint_cache: tuple[Any, Any] | None = None

    def _blas_context(self) -> contextlib.AbstractContextManager[Any]:
        if self.blas_threads is None:
            return contextlib.nullcontext()
        if self._controller is None:  # per instance: finding the BLAS libraries takes ~ms
            self._controller = ThreadpoolController()
        return self._controller.limit(limits=self.blas_threads, user_api="blas")

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_controller"] = None
        state["_joint_cache"] = None
        return state

    # -- public API ------------------------------------------------------------------
    def fit(self, X: Any, y: Any, *, hyperparameters: GPHyperparameters | None = None,
            theta: Any = None) -> GaussianProcess:
        """Fit to ``X`` (n, d), ``y`` (n,); with ``hyperparameters`` (y's units) or ``theta`` (the
        standardized units of :attr:`theta_`: another GP's, carried over to these targets), no optimization."""
        if hyperparameters is not None and theta is not None:
            raise InputDataError("give hyperparameters or theta, not both")
        return self._fit(X, y, None, hyperparameters, theta)

    def predict(self, X: Any) -> tuple[np.ndarray, np.ndarray]:
        """Posterior mean and variance of the latent f at ``X`` (m, d), in y's units."""
        return self._predict(X, None)

    def sample(self, X: Any, n_samples: int, seed: Seed = 0) -> np.ndarray:
        """``n_samples`` joint posterior samples of f at ``X`` (m, d): (n_samples, m)."""
        return self._sample(X, n_samples, seed, None)

    def posterior_state(self) -> PosteriorState:
        """The fitted posterior as arrays (one block, one hyperparameter vector: MAP), for
        code that predicts with many GPs at once (:mod:`metabo.surrogates.bank`)."""
        self._check_fitted()
        if len(self._posteriors) != 1 or len(self._posteriors[0].blocks) != 1:
            raise SurrogateError("posterior_state needs a MAP fit of a one-block GP")
        post = self._posteriors[0]
        (block,) = post.blocks.values()
        ls, amp, nu, m = unpack_theta(post.theta, self.X_.shape[1])
        return PosteriorState(self.X_[block.index].copy(), block.L.copy(), block.alpha.copy(), ls, amp, nu, m,
                              float(self.y_shift_), float(self.y_scale_))

    def add(self, x: Any, y: float) -> GaussianProcess:
        """Condition on one more observation; hyperparameters and standardization kept,
        each Cholesky factor extended by one row (O(n^2))."""
        return self._add(x, y, 0)

    @_blas_limited
    def refit(self, warm_start: bool = True) -> GaussianProcess:
        """Re-standardize y and re-estimate the hyperparameters on all data: from the
        current ones with one L-BFGS-B run (and a short slice chain from the last sample)
        if ``warm_start``, else as :meth:`fit` does."""
        self._check_fitted()
        old = (self.y_shift_, self.y_scale_)
        self._standardize()
        self._data_cache = None
        if not warm_start:
            self._set_posteriors(self._estimate(None))
            return self
        for post in self._posteriors:
            post.theta = self._restandardized(post.theta, *old)
        self._theta_map = self._restandardized(self._theta_map, *old)
        self._set_posteriors(self._estimate(self._theta_map, self._posteriors[-1].theta))
        return self

    @_blas_limited
    def log_marginal_likelihood(self, theta: Any = None, grad: bool = False) -> Any:
        """``log p(z | X, theta)`` of the standardized targets (eq. 2.16; summed over
        blocks), with its gradient w.r.t. ``theta`` if ``grad``; ``theta`` defaults to
        :attr:`theta_`."""
        self._check_fitted()
        th = self.theta_ if theta is None else np.asarray(theta, dtype=float)
        value, g = self._log_lik(th, grad)
        return (value, g) if grad else value

    @_blas_limited
    def log_posterior(self, theta: Any = None, grad: bool = False) -> Any:
        """``log p(z | X, theta) + log p(theta)``: the MAP objective and slice target."""
        self._check_fitted()
        th = self.theta_ if theta is None else np.asarray(theta, dtype=float)
        value, g = self._log_post(th, grad)
        return (value, g) if grad else value

    # -- fitted attributes -----------------------------------------------------------
    @property
    def theta_(self) -> np.ndarray:
        """The point estimate (MAP) ``[log l, log sigma_a^2, log nu, m]``, standardized units."""
        self._check_fitted()
        return self._theta_map.copy()

    @property
    def thetas_(self) -> np.ndarray:
        """Every hyperparameter vector predictions average over (1 for ``"mll"``)."""
        self._check_fitted()
        return np.array([p.theta for p in self._posteriors])

    @property
    def hyperparameters_(self) -> GPHyperparameters:
        """:attr:`theta_` in y's units."""
        ls, amp, nu, m = unpack_theta(self.theta_, self.X_.shape[1])
        s2 = self.y_scale_**2
        return GPHyperparameters(ls, amp * s2, nu * s2, self.y_shift_ + self.y_scale_ * m)

    @property
    def lengthscales_(self) -> np.ndarray:
        """The fitted lengthscales, one per input dimension."""
        return self.hyperparameters_.lengthscales

    @property
    def amplitude_(self) -> float:
        """Signal variance ``sigma_a^2`` in y's units (squared)."""
        return self.hyperparameters_.amplitude

    @property
    def noise_(self) -> float:
        """Noise variance ``nu`` in y's units (squared)."""
        return self.hyperparameters_.noise

    @property
    def mean_(self) -> float:
        """The fitted constant mean, in y's units."""
        return self.hyperparameters_.mean

    @property
    def jitter_(self) -> float:
        """The largest jitter any block's Cholesky factor needed (standardized units)."""
        self._check_fitted()
        return max(b.jitter for p in self._posteriors for b in p.blocks.values())

    # -- internals: data -------------------------------------------------------------
    def _check_fitted(self) -> None:
        if not self._posteriors:
            raise SurrogateError(f"{type(self).__name__} is not fitted; call fit(X, y) first")

    def _inputs(self, X: Any, what: str = "X") -> np.ndarray:
        A = np.asarray(X, dtype=float)
        if A.ndim != 2 or not np.all(np.isfinite(A)):
            raise InputDataError(f"{what} must be a finite 2-d array (n, d), got shape {A.shape}")
        if self._posteriors and A.shape[1] != self.X_.shape[1]:
            raise InputDataError(f"{what} has {A.shape[1]} columns, the GP was fitted on {self.X_.shape[1]}")
        return A

    @staticmethod
    def _groups(groups: Any, n: int) -> np.ndarray:
        if groups is None:
            return np.zeros(n, dtype=int)
        g = np.asarray(groups)
        if g.shape != (n,):
            raise InputDataError(f"groups must have shape ({n},), got {g.shape}")
        return g

    def _standardize(self) -> None:
        """Section notation: ``z = (y - ybar) / s``."""
        shift, scale = float(np.mean(self.y_)), float(np.std(self.y_))
        if not scale > 1e-12 * max(1.0, abs(shift)):
            scale = 1.0
        self.y_shift_, self.y_scale_ = shift, scale

    def _z(self) -> np.ndarray:
        return (self.y_ - self.y_shift_) / self.y_scale_

    def _data(self) -> list[tuple[np.ndarray, np.ndarray]]:
        """Per block: its inputs and standardized targets (cached between fits)."""
        if self._data_cache is None:
            z = self._z()
            self._data_cache = [(self.X_[i], z[i]) for i in self._index.values()]
        return self._data_cache

    def _restandardized(self, theta: np.ndarray, old_shift: float, old_scale: float) -> np.ndarray:
        d = self.X_.shape[1]
        th = theta.copy()
        ratio = 2.0 * np.log(old_scale / self.y_scale_)
        th[d] += ratio
        th[d + 1] += ratio
        th[d + 2] = (old_shift + old_scale * theta[d + 2] - self.y_shift_) / self.y_scale_
        if self.noise is not None:
            th[d + 1] = self._fixed_log_noise()
        return th

    def _fixed_log_noise(self) -> float:
        assert self.noise is not None, "called for a fixed noise only"
        return float(np.log(max(self.noise, 1e-300) / self.y_scale_**2))

    def _checked_theta(self, theta: Any) -> np.ndarray:
        th = np.array(theta, dtype=float)
        if th.shape != (self.X_.shape[1] + 3,) or not np.all(np.isfinite(th)):
            raise InputDataError(f"theta must be finite with shape ({self.X_.shape[1] + 3},), got {th.shape}")
        return th

    def _theta_from(self, h: GPHyperparameters) -> np.ndarray:
        d = self.X_.shape[1]
        ls = np.broadcast_to(np.asarray(h.lengthscales, dtype=float), (d,))
        s2 = self.y_scale_**2
        if np.any(ls <= 0) or h.amplitude <= 0 or h.noise < 0:
            raise InputDataError("lengthscales and amplitude must be > 0 and noise >= 0")
        return np.concatenate([np.log(ls), [np.log(h.amplitude / s2), np.log(max(h.noise, 1e-300) / s2),
                                            (h.mean - self.y_shift_) / self.y_scale_]])

    # -- internals: fitting ----------------------------------------------------------
    @_blas_limited
    def _fit(self, X: Any, y: Any, groups: Any, hyperparameters: GPHyperparameters | None,
             theta: Any = None) -> GaussianProcess:
        self._posteriors = []
        X = self._inputs(X)
        y = np.asarray(y, dtype=float)
        if y.shape != (X.shape[0],) or X.shape[0] == 0 or not np.all(np.isfinite(y)):
            raise InputDataError(f"y must be finite with shape ({X.shape[0]},) and n >= 1, got {y.shape}")
        g = self._groups(groups, X.shape[0])
        self.X_, self.y_, self.groups_ = X.copy(), y.copy(), g.copy()
        labels, inverse = np.unique(g, return_inverse=True)
        self._index = {lab.item(): np.flatnonzero(inverse == k) for k, lab in enumerate(labels)}
        self._data_cache = None
        self._standardize()
        start = time.perf_counter()
        if hyperparameters is not None or theta is not None:
            if theta is None:
                assert hyperparameters is not None
                self._theta_map = self._theta_from(hyperparameters)
            else:
                self._theta_map = self._checked_theta(theta)
            self._set_posteriors([self._theta_map])
        else:
            self._set_posteriors(self._estimate(None))
        logger.debug("GP fit n=%d d=%d blocks=%d in %.3fs", X.shape[0], X.shape[1], len(self._index),
                     time.perf_counter() - start)
        return self

    def _bounds(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Lower and upper bounds of theta and the mask of its free coordinates."""
        d = self.X_.shape[1]
        lo = np.r_[np.full(d, np.log(LENGTHSCALE_BOUNDS[0])), np.log(AMPLITUDE_BOUNDS[0]), np.log(NOISE_BOUNDS[0]),
                   MEAN_BOUNDS[0]]
        hi = np.r_[np.full(d, np.log(LENGTHSCALE_BOUNDS[1])), np.log(AMPLITUDE_BOUNDS[1]), np.log(NOISE_BOUNDS[1]),
                   MEAN_BOUNDS[1]]
        free = np.ones(d + 3, dtype=bool)
        if self.noise is not None:
            free[d + 1] = False
        return lo, hi, free

    def _starts(self, rng: np.random.Generator) -> list[np.ndarray]:
        """The default start (prior median lengthscale, sigma_a^2 = 1, nu = 1e-2 or the fixed
        noise, m = 0), then ``n_restarts`` draws: log l from its prior (log-uniform on
        [0.05, 5] if flat), log sigma_a^2 ~ N(0, 1), nu log-uniform on [1e-4, 1e-1], m ~ N(0, 0.25)."""
        d = self.X_.shape[1]
        pri = self.priors or GPPriors()
        lo, hi, _ = self._bounds()
        noise = self._fixed_log_noise() if self.noise is not None else np.log(1e-2)
        starts = [np.r_[np.full(d, pri.lengthscale_loc), 0.0, noise, 0.0]]
        for _ in range(self.n_restarts):
            if pri.lengthscale_scale is None:
                log_ls = rng.uniform(np.log(0.05), np.log(5.0), d)
            else:
                log_ls = pri.lengthscale_loc + pri.lengthscale_scale * rng.standard_normal(d)
            nu = self._fixed_log_noise() if self.noise is not None else rng.uniform(np.log(1e-4), np.log(1e-1))
            starts.append(np.r_[log_ls, rng.standard_normal(), nu, 0.5 * rng.standard_normal()])
        return [np.clip(s, lo, hi) for s in starts]

    def _joint(self) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """The blocks' rows stacked, their targets, and the same-block mask; None when
        there is one block or more than ``JOINT_MAX_ROWS`` rows (cached with :meth:`_data`)."""
        data = self._data()
        cached = self._joint_cache
        if cached is not None and cached[0] is data:
            return cached[1]
        joint = None
        if len(data) > 1 and self.X_.shape[0] <= JOINT_MAX_ROWS:
            labels = np.concatenate([np.full(len(zb), k) for k, (_, zb) in enumerate(data)])
            joint = (np.vstack([Xb for Xb, _ in data]), np.concatenate([zb for _, zb in data]),
                     (labels[:, None] == labels[None, :]).astype(float))
        self._joint_cache = (data, joint)
        return joint

    def _log_lik(self, theta: np.ndarray, grad: bool) -> tuple[float, np.ndarray | None]:
        joint = self._joint()
        if joint is not None:
            result = masked_log_likelihood(self._kernel, theta, *joint, grad)
            if result is not None:
                return result
        total, g = 0.0, (np.zeros(theta.size) if grad else None)
        for Xb, zb in self._data():
            value, gb, *_ = block_log_likelihood(self._kernel, theta, Xb, zb, grad)
            total += value
            if g is not None:
                assert gb is not None  # grad was asked
                g += gb
        return total, g

    def _log_post(self, theta: np.ndarray, grad: bool) -> tuple[float, np.ndarray | None]:
        value, g = self._log_lik(theta, grad)
        lp, gp = (self.priors or GPPriors()).log_prob(theta, self.X_.shape[1], grad)
        if g is not None:
            g = g + gp
        return value + lp, g

    def _lbfgs(self, theta0: np.ndarray, ftol: float = FTOL) -> tuple[np.ndarray, float]:
        """One L-BFGS-B maximization of the log posterior over the free coordinates
        (stops when the relative decrease of the objective falls below ``ftol``)."""
        lo, hi, free = self._bounds()
        base = theta0.copy()

        def objective(u: np.ndarray) -> tuple[float, np.ndarray]:
            th = base.copy()
            th[free] = u
            try:
                value, g = self._log_post(th, True)
            except SurrogateError:
                return 1e25, np.zeros(u.size)
            assert g is not None  # grad was asked
            return -value, -g[free]

        res = minimize(objective, np.clip(base[free], lo[free], hi[free]), jac=True, method="L-BFGS-B",
                       bounds=list(zip(lo[free], hi[free])), options={"maxiter": 200, "ftol": ftol})
        logger.debug("L-BFGS-B: %d iterations, %d evaluations, %s", res.nit, res.nfev, res.message)
        base[free] = res.x
        return base, -float(res.fun)

    def _estimate(self, warm: np.ndarray | None, chain_start: np.ndarray | None = None) -> list[np.ndarray]:
        """Hyperparameter vectors: the MAP (from ``warm`` alone, or from every start), then
        slice samples if ``optimizer == "slice"``. Sets ``_theta_map``."""
        rng = as_generator(self.seed)
        if warm is not None and self.noise is None:
            # Below ~1e-3 the likelihood is flat in log nu (the data are interpolated):
            # started there, L-BFGS-B would not see that more noise fits n new points better.
            d = self.X_.shape[1]
            warm = warm.copy()
            warm[d + 1] = max(warm[d + 1], np.log(WARM_NOISE_MIN))
        if warm is not None:
            best, best_value = self._lbfgs(warm)
        else:  # every start to a loose tolerance, then the best one polished
            best, best_value = None, -np.inf
            for th0 in self._starts(rng):
                th, value = self._lbfgs(th0, FTOL_RESTARTS)
                if value > best_value:
                    best, best_value = th, value
            if best is not None and best_value > -1e24:
                best, best_value = self._lbfgs(best)
        if best is None or best_value <= -1e24:
            raise SurrogateError("no hyperparameters give a positive-definite covariance; fix the noise "
                                 "to a larger value or remove duplicate points")
        self._theta_map = best
        if self.optimizer == "mll":
            return [best]
        lo, hi, free = self._bounds()

        def logp(u: np.ndarray) -> float:
            th = best.copy()
            th[free] = u
            try:
                return self._log_post(th, False)[0]
            except SurrogateError:
                return -np.inf

        x0 = best if chain_start is None else np.clip(chain_start, lo, hi)
        burn = self.n_burn if chain_start is None else max(1, self.n_burn // 10)
        samples = slice_sample(logp, x0[free], lo[free], hi[free], n_samples=self.n_samples, n_burn=burn, rng=rng)
        out = []
        for u in samples:
            th = best.copy()
            th[free] = u
            out.append(th)
        return out

    def _set_posteriors(self, thetas: list[np.ndarray]) -> None:
        posteriors = []
        for theta in thetas:
            post = Posterior(np.asarray(theta, dtype=float).copy())
            for (label, index), (Xb, zb) in zip(self._index.items(), self._data()):
                _, _, L, alpha, jitter = block_log_likelihood(self._kernel, post.theta, Xb, zb)
                if jitter > 0:
                    logger.info("GP block %r of size %d needed jitter %.3g", label, index.size, jitter)
                post.blocks[label] = Block(index, L, alpha, jitter)
            posteriors.append(post)
        self._posteriors = posteriors

    # -- internals: prediction -------------------------------------------------------
    def _group_posterior(
        self, post: Posterior, label: Any, Z: np.ndarray, full_cov: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """Mean and variance (or covariance) of f at ``Z`` in standardized units, from
        block ``label`` only (prior if the block has no data)."""
        d = self.X_.shape[1]
        ls, amp, _, m = unpack_theta(post.theta, d)
        prior = amp * self._kernel(Z, Z, ls) if full_cov else np.full(Z.shape[0], amp)
        block = post.blocks.get(label)
        if block is None:
            return np.full(Z.shape[0], m), prior
        Ks = amp * self._kernel(self.X_[block.index], Z, ls)  # k* for every test point
        mean = m + Ks.T @ block.alpha  # eq. 5.3
        V = block.inverse_factor() @ Ks  # L^-1 k*
        if full_cov:
            return mean, prior - V.T @ V
        return mean, np.maximum(prior - np.einsum("ij,ij->j", V, V), 0.0)  # eq. 5.4

    def _split(self, X: Any, groups: Any) -> tuple[np.ndarray, np.ndarray, dict[Any, np.ndarray]]:
        self._check_fitted()
        Z = self._inputs(X)
        g = self._groups(groups, Z.shape[0])
        labels, inverse = np.unique(g, return_inverse=True)
        return Z, g, {lab.item(): np.flatnonzero(inverse == k) for k, lab in enumerate(labels)}

    @_blas_limited
    def _predict(self, X: Any, groups: Any) -> tuple[np.ndarray, np.ndarray]:
        Z, _, parts = self._split(X, groups)
        means = np.empty((len(self._posteriors), Z.shape[0]))
        variances = np.empty_like(means)
        for s, post in enumerate(self._posteriors):
            for label, idx in parts.items():
                means[s, idx], variances[s, idx] = self._group_posterior(post, label, Z[idx], False)
        # mixture over hyperparameter samples: E[f] and E[v] + Var[mu]
        mean = means.mean(axis=0)
        var = variances.mean(axis=0) + (means.var(axis=0) if len(means) > 1 else 0.0)
        return self.y_shift_ + self.y_scale_ * mean, self.y_scale_**2 * var

    @_blas_limited
    def _sample(self, X: Any, n_samples: int, seed: Seed, groups: Any) -> np.ndarray:
        Z, _, parts = self._split(X, groups)
        rng = as_generator(seed)
        m = Z.shape[0]
        out = np.empty((n_samples, m))
        which = np.arange(n_samples) % len(self._posteriors)  # samples spread evenly over thetas
        for s, post in enumerate(self._posteriors):
            rows = np.flatnonzero(which == s)
            if rows.size == 0:
                continue
            mean, cov = np.empty(m), np.zeros((m, m))
            for label, idx in parts.items():  # zero covariance across groups
                mean[idx], cov[np.ix_(idx, idx)] = self._group_posterior(post, label, Z[idx], True)
            L, _ = cholesky_jitter(0.5 * (cov + cov.T))
            out[rows] = mean + (L @ rng.standard_normal((m, rows.size))).T
        return self.y_shift_ + self.y_scale_ * out

    # -- internals: one more observation -----------------------------------------------
    @_blas_limited
    def _add(self, x: Any, y: float, group: Any) -> GaussianProcess:
        self._check_fitted()
        xv = self._inputs(np.atleast_2d(np.asarray(x, dtype=float)), "x")
        if xv.shape[0] != 1 or not np.isfinite(y):
            raise InputDataError("add takes one point x (d,) and a finite y")
        n = self.X_.shape[0]
        self.X_ = np.vstack([self.X_, xv])
        self.y_ = np.append(self.y_, float(y))
        self.groups_ = np.append(self.groups_, group)
        label = np.asarray(group).item()
        self._index[label] = np.append(self._index.get(label, np.empty(0, dtype=int)), n)
        self._data_cache = None
        z = self._z()
        d = xv.shape[1]
        for post in self._posteriors:
            ls, amp, nu, m = unpack_theta(post.theta, d)
            block = post.blocks.get(label)
            index = self._index[label]
            if block is not None:
                # block Cholesky: [[L, 0], [l^T, l22]], L l = k(X_g, x), l22^2 = k(x, x) + nu - l^T l
                k = amp * self._kernel(self.X_[block.index], xv, ls)[:, 0]
                l12 = solve_triangular(block.L, k, lower=True, check_finite=False)
                l22_sq = amp + nu + block.jitter - float(l12 @ l12)
                if l22_sq > 1e-12 * (amp + nu):
                    L = np.zeros((index.size, index.size))
                    L[:-1, :-1] = block.L
                    L[-1, :-1] = l12
                    L[-1, -1] = np.sqrt(l22_sq)
                    alpha = cho_solve((L, True), z[index] - m, check_finite=False)
                    post.blocks[label] = Block(index, L, alpha, block.jitter)
                    continue
            _, _, L, alpha, jitter = block_log_likelihood(self._kernel, post.theta, self.X_[index], z[index])
            post.blocks[label] = Block(index, L, alpha, jitter)
        return self
