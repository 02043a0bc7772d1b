"""Weak priors on the GP hyperparameters, as log-densities of the optimized coordinates.

Coordinates (standardized y, inputs in [0, 1]^d): ``theta = [log l_1..log l_d, log sigma_a^2,
log nu, m]`` (lengthscales, signal variance, noise variance, constant mean).

Defaults follow the thesis (5.5, after Snoek et al. 2012): "a log normal prior with zero
mean and unit standard deviation is placed on the length-scales l and the kernel amplitude
sigma_f, and a horseshoe prior with scale 1 is placed on the noise":

- ``log l_k ~ N(mu_l, s_l^2)``, default ``mu_l = 0, s_l = 1``;
  :meth:`GPPriors.dimension_scaled` gives BoTorch's ``mu_l = sqrt2 + log(d)/2, s_l = sqrt3``
  (Hvarfner et al. 2024), weaker and better suited to long CASH encodings;
- ``log sigma_a ~ N(0, 1)``, i.e. ``log sigma_a^2 ~ N(0, 2^2)``;
- horseshoe on the noise variance as in Spearmint, ``log p(nu) = log log(1 + 3 (s_h / nu)^2)``
  (evaluated on ``nu`` itself, without the ``d nu / d log nu`` Jacobian, so that a
  near-noiseless fit stays possible down to the noise floor);
- ``m ~ N(0, s_m^2)``, default ``s_m = 1`` (one standard deviation of y).

The densities are the log-terms added to the log marginal likelihood (MAP estimate) and
the target of slice sampling; constants are dropped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class GPPriors:
    """Hyperparameter priors (see the module docstring); ``None`` scale = flat."""

    #: a float, or one value per input dimension (a pre-trained prior,
    #: :mod:`metabo.surrogates.pretrained`)
    lengthscale_loc: float | np.ndarray = 0.0
    lengthscale_scale: float | np.ndarray | None = 1.0
    amplitude_scale: float | None = 1.0  # std of log sigma_a (log of the signal std)
    noise_scale: float | None = 1.0  # horseshoe scale on nu
    mean_scale: float | None = 1.0

    @classmethod
    def dimension_scaled(cls, d: int) -> GPPriors:
        """``log l ~ N(sqrt2 + log(d)/2, 3)`` (BoTorch's default since 0.12)."""
        return cls(lengthscale_loc=float(np.sqrt(2.0) + 0.5 * np.log(d)), lengthscale_scale=float(np.sqrt(3.0)))

    @classmethod
    def flat(cls) -> GPPriors:
        """No prior: plain maximum likelihood within the bounds."""
        return cls(lengthscale_scale=None, amplitude_scale=None, noise_scale=None, mean_scale=None)

    def log_prob(self, theta: np.ndarray, d: int, grad: bool = False) -> tuple[float, np.ndarray | None]:
        """``log p(theta)`` (up to a constant) and, if ``grad``, its gradient (p,)."""
        lp = 0.0
        g = np.zeros_like(theta) if grad else None
        if self.lengthscale_scale is not None:
            z = (theta[:d] - self.lengthscale_loc) / self.lengthscale_scale
            lp -= 0.5 * float(z @ z)
            if g is not None:
                g[:d] = -z / self.lengthscale_scale
        if self.amplitude_scale is not None:
            var = (2.0 * self.amplitude_scale) ** 2  # log sigma^2 = 2 log sigma
            lp -= 0.5 * theta[d] ** 2 / var
            if g is not None:
                g[d] = -theta[d] / var
        if self.noise_scale is not None:
            # q = 3 s^2 / nu^2 = 3 s^2 exp(-2u); d/du log log(1+q) = -2 q / ((1+q) log(1+q))
            q = 3.0 * self.noise_scale**2 * np.exp(-2.0 * theta[d + 1])
            log1pq = np.log1p(q)
            lp += float(np.log(log1pq))
            if g is not None:
                g[d + 1] = -2.0 * q / ((1.0 + q) * log1pq)
        if self.mean_scale is not None:
            lp -= 0.5 * (theta[d + 2] / self.mean_scale) ** 2
            if g is not None:
                g[d + 2] = -theta[d + 2] / self.mean_scale**2
        return float(lp), g
