"""Surrogate models: the GP of the SMBO core (thesis chapters 2 and 5).

- :class:`GaussianProcess`: constant mean, Matern 5/2 (or Laplace) ARD kernel, Gaussian
  noise; hyperparameters by MAP (L-BFGS-B, analytic gradients, restarts) or slice sampling.
- :class:`ConditionalGP`: the conditional kernel of thesis 5.4.1 (block-wise Cholesky).
- :func:`impute_inactive`, :func:`cash_groups`, :func:`groups_from_active`: encodings.
"""

from metabo.surrogates.conditional import ConditionalGP, cash_groups, groups_from_active, impute_inactive
from metabo.surrogates.gp import GaussianProcess, GPHyperparameters, cholesky_jitter
from metabo.surrogates.kernels import KERNELS, Kernel, Laplace, Matern12, Matern52, get_kernel
from metabo.surrogates.priors import GPPriors

__all__ = [
    "KERNELS",
    "ConditionalGP",
    "GPHyperparameters",
    "GPPriors",
    "GaussianProcess",
    "Kernel",
    "Laplace",
    "Matern12",
    "Matern52",
    "cash_groups",
    "cholesky_jitter",
    "get_kernel",
    "groups_from_active",
    "impute_inactive",
]
