"""Ablations of the default warm start that lost, kept so the measured history stays
reproducible: :class:`PortfolioVariant`, :class:`~metabo.strategies.portfolio.PortfolioWarmStart`
with the options each report measured (``warm@key=value`` in :mod:`benchmarks.warm_bench`,
``scripts/bench_portfolio_ceiling.py``, ``scripts/bench_oboe_grid.py``). Notation as in
:mod:`metabo.strategies.portfolio`. With none of its options set the variant is the default.

- ``bandwidth_k = k``: the prior ``w0_p ∝ exp(-d_p / h)`` with ``h`` the distance of the
  ``k``-th nearest task instead of the median (an adaptive bandwidth, as in k-nearest-neighbour
  kernel density estimates: the prior keeps its mass on about the same number of nearest
  tasks however many the knowledge base holds, where the median spreads it over half of
  them). Measured in ``reports/warm/ablations/bandwidth-keel``, ``reports/warm/oboe/bandwidth``
  and ``reports/warm/flywheel-k3``.
- ``unknown_prior``: the prior weight of a task whose meta-feature distance is unknown,
  ``"median"`` (the default's), ``"min"`` (the least known weight) or ``"zero"`` (none: the
  transfer uses the tasks it can compare alone). ``reports/warm/oboe/unknown``,
  ``reports/warm/oboe-grid``.
- ``source_prior="equal"``: the prior rescaled so that each source family of
  :attr:`~metabo.kb.past.PastRuns.sources` holds the same total (:func:`balance_sources`),
  instead of every task weighing by its distance alone (``"tasks"``, the default's).
  ``reports/warm/oboe``, ``reports/warm/oboe-grid``.
- ``n_distinct = k``: with ``distinct``, only the first ``k`` portfolio picks must be of an
  algorithm not tried yet; the later ones may return to an algorithm already tried, its next
  configuration by the same gain. ``reports/warm/ablations/n-distinct``,
  ``reports/warm/ablations/n_distinct_surrogate_summary.txt``.
- ``pretrained = s``: the search phase's GP (the default ``then``) takes lengthscale priors
  pre-trained on the past tasks, ``log l ~ N(log l_pre, s^2)`` (after HyperBO, Wang et al.
  2024; :func:`metabo.surrogates.pretrained.pretrained_priors`).
  ``reports/warm/ablations/pretrained``.
- ``prior_mean``: the search phase models the residual of a transferred prior mean
  (:class:`ResidualGP`; the past used as a prior mean that the target's data overrides, as
  in the GP of Salinas, Shen & Perrone 2020, here on the normalized-regret scale with an
  affine map fitted to the target): ``m0(x)`` is the weighted past regret
  ``qbar_c = sum_p w_p Q_{p,c} / sum_p w_p 1(Q_{p,c} known)`` averaged over the
  ``n_neighbours`` recorded configurations of ``x``'s algorithm nearest to ``x`` in the
  encoding (the neutral ``mean_c qbar_c`` for an algorithm the past never ran), the weights
  those of the refit prefix; the GP then models ``z - a - b m0(x)`` with ``(a, b >= 0)`` by
  least squares (``b = 0``, the cold model, when ``m0`` explains nothing).
  ``reports/warm/ablations/prior_mean_summary.txt``.

The "Ablations" section of ``reports/warm/README.md`` has the commands and the numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from metabo.exceptions import InputDataError
from metabo.kb.canonical import config_id
from metabo.kb.past import PastRuns
from metabo.space.cash import CASHSpace
from metabo.strategies.base import Config
from metabo.strategies.portfolio import PortfolioWarmStart, RegretMatrix, coverage_weights, task_distances
from metabo.surrogates.warping import WarpingCache

if TYPE_CHECKING:
    from metabo.optimizer.history import History
    from metabo.strategies.gp import GPBO

#: Weights of a task whose meta-feature distance is unknown (:func:`prior_weights`).
UNKNOWN_PRIORS = ("median", "min", "zero")
#: The constructor options of :class:`PortfolioVariant` that the default does not have.
VARIANT_OPTIONS = ("n_distinct", "prior_mean", "source_prior", "bandwidth_k", "pretrained", "unknown_prior")


def prior_weights(past: PastRuns, tasks: Sequence[str], meta_features: Mapping[str, float] | None,
                  source_prior: str = "tasks", bandwidth_k: int | None = None, unknown: str = "median") -> np.ndarray:
    """:func:`metabo.strategies.portfolio.prior_weights` with the variants' options (module
    docstring): ``source_prior="equal"`` (:func:`balance_sources`), ``bandwidth_k`` (``h``
    the ``k``-th smallest known distance instead of the median) and ``unknown``."""
    if unknown not in UNKNOWN_PRIORS:
        raise InputDataError(f"unknown must be one of {UNKNOWN_PRIORS}, got {unknown!r}")
    w = _distance_weights(past, tasks, meta_features, bandwidth_k, unknown)
    return balance_sources(w, [past.sources.get(t, "") for t in tasks]) if source_prior == "equal" else w


def balance_sources(w: np.ndarray, sources: Sequence[str]) -> np.ndarray:
    """``w`` rescaled within each source so that every source holds ``1 / S`` of the total:
    a collection of hundreds of tasks measured one way (OBOE's 418) is one witness beside
    another (the 42 tasks of the project's own runs) until the new task's results say
    which ranks it alike, rather than outvoting it by its size; the order of the weights
    within a source is kept."""
    w = np.asarray(w, dtype=float)
    names = sorted(set(sources))
    out = w.copy()
    for name in names:
        mine = np.array([s == name for s in sources])
        total = w[mine].sum()
        out[mine] = w[mine] / total / len(names) if total > 0 else 1.0 / (mine.sum() * len(names))
    return out / out.sum()


def _distance_weights(past: PastRuns, tasks: Sequence[str], meta_features: Mapping[str, float] | None,
                      bandwidth_k: int | None = None, unknown: str = "median") -> np.ndarray:
    d = task_distances(past, tasks, meta_features)
    if d is None:
        return np.full(len(tasks), 1.0 / len(tasks))
    finite = np.isfinite(d)
    known = np.sort(d[finite])
    h = float(np.median(known) if bandwidth_k is None else known[min(bandwidth_k, len(known)) - 1]) or 1.0
    logw = np.where(finite, -d / h, np.nan)
    logw[~finite] = {"median": np.nanmedian(logw), "min": np.nanmin(logw), "zero": -np.inf}[unknown]
    w = np.exp(logw - np.nanmax(logw))
    return w / w.sum()


def _positive_int_or_none(name: str, value: Any, least: int) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < least):
        kind = "positive" if least > 0 else "non-negative"
        raise InputDataError(f"{name} must be a {kind} integer or None, got {value!r}")


class PortfolioVariant(PortfolioWarmStart):
    """:class:`~metabo.strategies.portfolio.PortfolioWarmStart` with the ablation options
    (module docstring), each as it was measured; the other arguments are the default's.

    Args:
        n_distinct: with ``distinct``, only the first ``n_distinct`` picks are of untried
            algorithms (None: all ``n_portfolio`` of them).
        prior_mean: the search phase's GP models the residual of the transferred mean.
        source_prior: ``"tasks"``: every past task weighs by its distance alone, so a source
            of many tasks holds most of the prior mass; ``"equal"``: each source family
            (:attr:`PastRuns.sources`) holds the same share (:func:`balance_sources`).
        bandwidth_k: the prior's bandwidth is the distance of the ``k``-th nearest task
            (None: the median distance).
        pretrained: the search phase's GP (the default ``then``) takes lengthscale priors
            pre-trained on the past tasks, ``log l ~ N(log l_pre, pretrained^2)``
            (:func:`metabo.surrogates.pretrained.pretrained_priors`; None: the default priors).
        unknown_prior: the prior weight of a past task whose meta-feature distance is unknown
            (:func:`prior_weights`' ``unknown``: ``"median"``, ``"min"`` or ``"zero"``).
    """

    #: recorded configurations averaged by the transfer mean ``m0`` (nearest in the encoding)
    n_neighbours = 3

    def __init__(self, past: PastRuns, meta_features: Mapping[str, float] | pd.Series | None = None, *,
                 n_distinct: int | None = None, prior_mean: bool = False, source_prior: str = "tasks",
                 bandwidth_k: int | None = None, pretrained: float | None = None, unknown_prior: str = "median",
                 then: GPBO | Any | None = None, **kwargs: Any) -> None:
        _positive_int_or_none("n_distinct", n_distinct, 0)
        if source_prior not in ("tasks", "equal"):
            raise InputDataError(f"source_prior must be 'tasks' or 'equal', got {source_prior!r}")
        if unknown_prior not in UNKNOWN_PRIORS:
            raise InputDataError(f"unknown_prior must be one of {UNKNOWN_PRIORS}, got {unknown_prior!r}")
        _positive_int_or_none("bandwidth_k", bandwidth_k, 1)
        if pretrained is not None and (then is not None or not pretrained > 0):
            raise InputDataError(f"pretrained must be a positive prior scale for the default search phase, got "
                                 f"{pretrained!r} with then={then!r}")
        self.n_distinct, self.prior_mean, self.source_prior = n_distinct, prior_mean, source_prior
        self.bandwidth_k, self.pretrained, self.unknown_prior = bandwidth_k, pretrained, unknown_prior
        super().__init__(past, meta_features, then=then, **kwargs)
        self._residual: ResidualGP | None = None
        self._encoded: tuple[CASHSpace, dict[str, tuple[np.ndarray, np.ndarray]]] | None = None
        self._pretrained_for: CASHSpace | None = None

    def __repr__(self) -> str:
        options = {k: getattr(self, k) for k in VARIANT_OPTIONS}
        return "PortfolioVariant(" + super().__repr__().partition("(")[2][:-1] + "".join(
            f", {k}={v!r}" for k, v in options.items()) + ")"

    # ------------------------------------------------------------------ design
    def prior(self, m: RegretMatrix) -> np.ndarray:
        """:func:`prior_weights` with the variant's options, times :func:`coverage_weights`."""
        w = prior_weights(self.past, m.tasks, self.meta_features, self.source_prior, self.bandwidth_k,
                          self.unknown_prior) * coverage_weights(m.Q)
        return w / w.sum()

    def _pick(self, m: RegretMatrix, gain: np.ndarray, tried: set[str], picked: int = 0) -> int | None:
        """The default's pick; from the ``n_distinct``-th pick on, every algorithm counts as untried."""
        if self.n_distinct is not None and picked >= self.n_distinct:
            tried = set()
        return super()._pick(m, gain, tried, picked)

    # ------------------------------------------------------------------ search phase
    def _pretrain(self, space: CASHSpace) -> None:
        """With ``pretrained``, the search phase's GP-BO with priors pre-trained for ``space``
        (once per space)."""
        if self.pretrained is None or self._pretrained_for is space:
            return
        from metabo.strategies.gp import GPBO
        from metabo.surrogates.pretrained import pretrained_priors

        priors = pretrained_priors(self.past, space, scale=self.pretrained, warping=self.then.warping, seed=self.seed)
        self.then = GPBO(n_init=0, seed=self.seed, priors=priors)
        self._pretrained_for = space

    def search_suggest(self, history: History, space: CASHSpace, rng: np.random.Generator) -> Config:
        self._pretrain(space)
        if self.prior_mean:
            return self._residual_gp().suggest(history, space, rng, self.transfer_mean(history, space),
                                               self.transfer_starts(history, space))
        return super().search_suggest(history, space, rng)

    def search_acquisition(self, history: History, space: CASHSpace, rng: np.random.Generator) -> Any:
        self._pretrain(space)
        if self.prior_mean:
            return self._residual_gp().acquisition(history, space, self.transfer_mean(history, space))
        return super().search_acquisition(history, space, rng)

    def posterior_mean(self, history: History, space: CASHSpace, configs: Sequence[Config]) -> np.ndarray:
        self._pretrain(space)
        if self.prior_mean:
            return self._residual_gp().posterior_mean(history, space, self.transfer_mean(history, space), configs)
        return super().posterior_mean(history, space, configs)

    # ------------------------------------------------------------------ prior mean
    def _residual_gp(self) -> ResidualGP:
        if self._residual is None:
            self._residual = ResidualGP(self.then)
        return self._residual

    def transfer_mean(self, history: History, space: CASHSpace) -> Callable[[np.ndarray], np.ndarray]:
        """``m0``: encoded CASH rows -> the weighted past tasks' regret there (module
        docstring, ``prior_mean``), with the weights of the history's refit prefix."""
        m, _ = self.matrix(space)
        n = len(history.completed)
        prefix = n - n % self.then.refit_every if n >= self.then.refit_every else n
        from metabo.optimizer.history import History as _History

        w = self.weights(_History([r for r in history.completed[:prefix]]), space)
        finite = np.isfinite(m.Q)
        cover = w @ finite
        qbar = np.where(cover > 0, (w @ np.where(finite, m.Q, 0.0)) / np.where(cover > 0, cover, 1.0), np.nan)
        neutral = float(np.nanmean(qbar)) if np.isfinite(qbar).any() else 0.5
        encoded = self._encodings(space)
        index = {a: k for k, a in enumerate(space.algorithms)}

        def mean(X: np.ndarray) -> np.ndarray:
            from scipy.spatial.distance import cdist

            X = np.asarray(X, dtype=float)
            out = np.full(len(X), neutral)
            owner = np.argmax(X[:, : len(space)], axis=1)
            for a, (cols, E) in encoded.items():
                rows = np.flatnonzero(owner == index[a])
                q = qbar[cols]
                ok = np.isfinite(q)
                if not len(rows) or not ok.any():
                    continue
                E_ok, q_ok = E[ok], q[ok]
                k = min(self.n_neighbours, len(q_ok))
                D = cdist(X[rows][:, space.slices[a]], E_ok) if E_ok.shape[1] else np.zeros((len(rows), len(q_ok)))
                near = np.argpartition(D, k - 1, axis=1)[:, :k]
                out[rows] = q_ok[near].mean(axis=1)
            return out

        return mean

    def _encodings(self, space: CASHSpace) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """Per algorithm: the matrix columns of its recorded configurations and their
        encoding in its own block."""
        if self._encoded is None or self._encoded[0] is not space:
            m, _ = self.matrix(space)
            out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
            for a in space.algorithms:
                cols = np.array([j for j, (b, _) in enumerate(m.configs) if b == a], dtype=int)
                if len(cols):
                    out[a] = (cols, space[a].encode_many([m.configs[j][1] for j in cols]))
            self._encoded = (space, out)
        return self._encoded[1]


class ResidualGP:
    """GP-BO on the residual of a transferred prior mean (module docstring, ``prior_mean``):
    ``z`` the warped values (:func:`~metabo.surrogates.warping.warp`, as GP-BO), ``(a, b)``
    by least squares of ``z`` on ``m0(x)`` over the refit prefix (``b >= 0``), the
    conditional GP of ``settings`` (a :class:`~metabo.strategies.gp.GPBO`) fitted on
    ``r = z - a - b m0(x)``; log EI of ``a + b m0(x) + mu_r(x)`` with the GP's variance."""

    def __init__(self, settings: GPBO) -> None:
        from metabo.strategies.gp import ModelCache, make_gp

        self.settings = settings
        self._cache = ModelCache(make_gp(True, settings.gp_kernel, settings.noise, settings.n_restarts),
                                 settings.seed, settings.refit_every, settings.warm_refit, "none")
        self._warp = WarpingCache(settings.warping)

    def _fit(self, history: History, space: CASHSpace, mean: Callable[[np.ndarray], np.ndarray], *,
             refit: bool = False) -> tuple[Any, float, float, float]:
        """(residual GP, a, b, best warped value)."""
        X, y = history.X(space), history.y
        n = len(y)
        r_every = self.settings.refit_every
        m = n if refit or n < max(r_every, 3) else n - n % r_every
        z = self._warp(y, m)
        m0 = mean(X)
        a, b = float(z[:m].mean()), 0.0
        if m >= 2 and np.ptp(m0[:m]) > 1e-9:  # a slope only where m0 varies
            (a_, b_), *_ = np.linalg.lstsq(np.column_stack([np.ones(m), m0[:m]]), z[:m], rcond=None)
            if np.isfinite(b_) and b_ > 0:
                a, b = float(a_), float(b_)
        groups = np.argmax(X[:, : len(space)], axis=1)
        model, _ = self._cache.model(X, z - a - b * m0, groups, refit=refit)
        return model, float(a), float(b), float(z.min())

    def acquisition(self, history: History, space: CASHSpace, mean: Callable[[np.ndarray], np.ndarray]
                    ) -> Callable[[np.ndarray], np.ndarray] | None:
        if len(history.completed) < 2 or not any(r.ok for r in history.completed):
            return None
        from metabo.strategies.base import thread_limits

        with thread_limits(self.settings.threads):
            model, a, b, best = self._fit(history, space, mean)

        def score(Xc: np.ndarray) -> np.ndarray:
            with thread_limits(self.settings.threads):
                mu, var = model.predict(Xc, groups=np.argmax(Xc[:, : len(space)], axis=1))
                return self.settings._log_ei(a + b * mean(Xc) + mu, var, best)

        return score

    def suggest(self, history: History, space: CASHSpace, rng: np.random.Generator,
                mean: Callable[[np.ndarray], np.ndarray], extra_starts: Sequence[Config]) -> Config:
        from metabo.strategies.base import random_configuration
        from metabo.strategies.gp import top_configurations

        score = self.acquisition(history, space, mean)
        if score is None:
            return random_configuration(space, rng, history.config_ids)
        starts = top_configurations(history.completed, history.y, self.settings.n_starts)
        starts += [c for c in extra_starts if config_id(*c) not in history.config_ids]
        config, _ = self.settings._maximize(space, score, starts, history, rng)
        return config

    def posterior_mean(self, history: History, space: CASHSpace, mean: Callable[[np.ndarray], np.ndarray],
                       configs: Sequence[Config]) -> np.ndarray:
        model, a, b, _ = self._fit(history, space, mean, refit=True)
        Xc = space.encode_many(list(configs))
        mu, _ = model.predict(Xc, groups=np.argmax(Xc[:, : len(space)], axis=1))
        return a + b * mean(Xc) + mu


def warm_start(past: PastRuns, meta_features: Mapping[str, float] | pd.Series | None = None,
               **options: Any) -> PortfolioWarmStart:
    """The default warm start, or :class:`PortfolioVariant` when an option of
    :data:`VARIANT_OPTIONS` is given (the benchmarks' ``warm@key=value``)."""
    if any(k in options for k in VARIANT_OPTIONS):
        return PortfolioVariant(past, meta_features, **options)
    return PortfolioWarmStart(past, meta_features, **options)


__all__ = ["UNKNOWN_PRIORS", "VARIANT_OPTIONS", "PortfolioVariant", "ResidualGP", "balance_sources", "prior_weights",
           "warm_start"]
