"""GP hyperparameter priors pre-trained on the past tasks (empirical Bayes across tasks).

Wang, Dahl, Swersky et al., "Pre-trained Gaussian processes for Bayesian optimization"
(HyperBO, JMLR 25, 2024), sec. 4: when the functions of past tasks are draws from one GP,
its mean and kernel can be estimated by maximizing the sum of the tasks' log marginal
likelihoods, and a new task's BO then starts with a model whose kernel already says which
hyperparameters matter and at what scale, where a GP fitted on a handful of the new
task's points cannot tell.

Here, with the project's conditional GP (thesis 5.4.1: one block per algorithm, shared
hyperparameters ``theta = [log l (d), log sigma_a^2, log nu, m]``): every past task's
values are warped and standardized as the target's GP warps them
(:func:`~metabo.surrogates.warping.warp`, then zero mean and unit variance per task), each
(task, algorithm) pair is one block, and ``theta`` is the MAP of the summed log marginal
likelihood of all blocks (:class:`~metabo.surrogates.conditional.ConditionalGP` fitted on
the stacked data). A block holds at most ``max_per_block`` runs (drawn with the seed), which
bounds the cost at ``O(sum_b n_b^3)``.

Deviations from HyperBO: the pre-trained kernel is not used as is but as the centre of
the target GP's lengthscale prior, ``log l_k ~ N(log l_k^pre, s^2)``
(:class:`~metabo.surrogates.priors.GPPriors` with per-dimension location and scale), so
that the new task's own data can move it once it has enough points; the constant mean is
not transferred (each task is standardized on its own). Dimensions that no past block
informs (algorithms the past never ran, the one-hot algorithm indicators, which are
constant within a block) keep the default prior.
"""

from __future__ import annotations

import logging
import time

import numpy as np

from metabo._typing import Seed, as_generator
from metabo.exceptions import InputDataError, InvalidConfigurationError, UnknownAlgorithmError
from metabo.kb.past import PastRuns
from metabo.space.cash import CASHSpace
from metabo.surrogates.priors import GPPriors
from metabo.surrogates.warping import Warping, warp

logger = logging.getLogger(__name__)

__all__ = ["pretrain_theta", "pretrained_priors", "stacked_past"]


def stacked_past(past: PastRuns, space: CASHSpace, *, warping: Warping = "yeo-johnson", max_per_block: int = 25,
                 seed: Seed = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(X, z, groups)``: the past runs of ``space``'s algorithms encoded in ``space``,
    each task's values warped and standardized on their own, one group per (task,
    algorithm) with at most ``max_per_block`` runs (a seeded draw)."""
    if max_per_block < 2:
        raise InputDataError(f"max_per_block must be >= 2, got {max_per_block}")
    rng = as_generator(seed)
    Xs, zs, gs = [], [], []
    group = 0
    encoded: dict[tuple[str, str], np.ndarray | None] = {}  # a configuration recurs across tasks: encoded once
    for task in past.tasks:
        rows, values, labels = [], [], []
        for algorithm, runs in past.task_runs(task).items():
            if algorithm not in space:
                continue
            ok = []
            for stored, params, value in zip(runs.config_ids, runs.params, runs.values):  # values are finite
                key = (algorithm, stored)
                if key not in encoded:
                    try:
                        encoded[key] = space.encode(*space.normalize(algorithm, params))
                    except (InvalidConfigurationError, UnknownAlgorithmError, InputDataError):
                        encoded[key] = None
                if encoded[key] is not None:
                    ok.append((encoded[key], float(value)))
            if len(ok) < 2:
                continue
            if len(ok) > max_per_block:
                ok = [ok[i] for i in np.sort(rng.choice(len(ok), max_per_block, replace=False))]
            rows += [x for x, _ in ok]
            values += [v for _, v in ok]
            labels += [group] * len(ok)
            group += 1
        if len(values) < 3 or np.ptp(values) == 0:
            continue
        z = warp(np.array(values), kind=warping)
        z = (z - z.mean()) / (z.std() or 1.0)
        Xs.append(np.array(rows))
        zs.append(z)
        gs.append(np.array(labels))
    if not Xs:
        raise InputDataError("no past task has runs of the space's algorithms to pre-train on")
    return np.vstack(Xs), np.concatenate(zs), np.concatenate(gs)


def pretrain_theta(past: PastRuns, space: CASHSpace, *, warping: Warping = "yeo-johnson", max_per_block: int = 25,
                   kernel: str = "matern52", seed: Seed = 0) -> tuple[np.ndarray, np.ndarray]:
    """The MAP ``theta`` of the conditional GP on :func:`stacked_past`, and the mask of
    the lengthscales that some block informs (a coordinate that varies within a block)."""
    from metabo.surrogates.conditional import ConditionalGP

    X, z, groups = stacked_past(past, space, warping=warping, max_per_block=max_per_block, seed=seed)
    informed = np.zeros(X.shape[1], dtype=bool)
    for g in np.unique(groups):
        block = X[groups == g]
        informed |= np.ptp(block, axis=0) > 0
    start = time.perf_counter()
    gp = ConditionalGP(kernel=kernel, n_restarts=0, seed=seed).fit(X, z, groups=groups)
    logger.info("pre-trained GP hyperparameters on %d runs in %d blocks of %d tasks: %.1f s", len(z),
                len(np.unique(groups)), len(past.tasks), time.perf_counter() - start)
    return gp.theta_, informed


def pretrained_priors(past: PastRuns, space: CASHSpace, *, scale: float = 0.5, warping: Warping = "yeo-johnson",
                      max_per_block: int = 25, kernel: str = "matern52", seed: Seed = 0,
                      base: GPPriors | None = None) -> GPPriors:
    """``base`` (default :class:`GPPriors`) with ``log l_k ~ N(log l_k^pre, scale^2)`` on the
    dimensions the past informs (module docstring), the base prior elsewhere."""
    if not scale > 0:
        raise InputDataError(f"scale must be positive, got {scale!r}")
    base = base or GPPriors()
    theta, informed = pretrain_theta(past, space, warping=warping, max_per_block=max_per_block, kernel=kernel,
                                     seed=seed)
    d = len(informed)
    base_scale = 1.0 if base.lengthscale_scale is None else base.lengthscale_scale
    loc = np.where(informed, theta[:d], np.broadcast_to(base.lengthscale_loc, (d,)))
    sd = np.where(informed, scale, np.broadcast_to(base_scale, (d,)))
    return GPPriors(lengthscale_loc=loc, lengthscale_scale=sd, amplitude_scale=base.amplitude_scale,
                    noise_scale=base.noise_scale, mean_scale=base.mean_scale)
