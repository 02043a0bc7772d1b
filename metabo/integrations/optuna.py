"""An Optuna sampler warm-started from the knowledge base.

:class:`WarmStartSampler` gives the first trials of a study the warm-start configurations,
in order, then defers to ``then``: any Optuna sampler (default ``TPESampler(seed=seed)``)
or ``"gp"``, the project's :class:`~metabo.strategies.gp.GPBO` fitted on the completed
trials. The warm configurations (:meth:`WarmStartSampler.from_kb`) are, by default, the
project's default warm start's portfolio
(:meth:`~metabo.strategies.portfolio.PortfolioWarmStart.portfolio`: greedy picks of recorded
configurations that most lower the past tasks' regret, the tasks weighted by meta-feature
similarity; Wistuba et al. 2015), fixed in advance since Optuna takes a list of first
trials; or, with ``method="knn"``, the design of :class:`~metabo.strategies.knn.KNNWarmStart`:
the best configuration of each of the ``k`` past tasks nearest to the new one by
meta-features, nearest first (Feurer, Springenberg and Hutter 2015, "Initializing Bayesian
Hyperparameter Optimization via Meta-Learning", AAAI); or any list of parameter dicts
given directly.

Mechanics. Trial number ``i < n_warm`` takes warm configuration ``i``: trial numbers are
unique among the workers sharing a storage, so which trial gets which configuration is
deterministic and no configuration is given twice. A warm value is returned by
``sample_independent`` and ``sample_relative`` alike, when the distribution the objective
asks for contains it; a parameter the configuration lacks, or holds outside that
distribution, is sampled by ``then`` (Optuna's ``fixed_params``, behind
``study.enqueue_trial``, would pass an out-of-range value through with a warning). An
enqueued trial keeps its own values, which Optuna reads before asking any sampler.

``"gp"``: the relative search space is the intersection of the completed trials'
distributions (as Optuna's GPSampler), translated to the project's space: floats to
:class:`Float`, integers to :class:`Integer` (log scales kept), a stepped distribution to
an :class:`Integer` over its grid index, a categorical to a :class:`Categorical` over its
choice indices; a maximized study's values are negated. Parameters outside that space
(conditional ones), and all of them once GP-BO finds every configuration of a finite space
evaluated (it never repeats one), are drawn by Optuna's ``RandomSampler``. Failed trials
enter as crashes (the worst value), and other workers' running trials as constant lies
(:meth:`metabo.optimizer.History.with_lies`, Ginsbourger et al. 2010), so parallel workers
are kept apart as the project's optimizer keeps them. Single-objective only.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

import numpy as np
from optuna.distributions import BaseDistribution, CategoricalDistribution, FloatDistribution, IntDistribution
from optuna.samplers import BaseSampler, RandomSampler, TPESampler
from optuna.search_space import IntersectionSearchSpace
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from metabo.exceptions import InputDataError
from metabo.space.values import is_integer, is_real, same_scalar

if TYPE_CHECKING:
    import pandas as pd
    from optuna.study import Study

    from metabo.kb.past import PastRuns
    from metabo.kb.store import KnowledgeBase
    from metabo.space.hyperparameters import Hyperparameter
    from metabo.strategies.base import Config

logger = logging.getLogger(__name__)

_MISSING = object()  # no usable warm value
_ALGORITHM = "optuna"  # the one algorithm of the GP's CASH space


class WarmStartSampler(BaseSampler):
    """The warm configurations first, in order, then ``then`` (module docstring).

    Args:
        warm: Optuna parameter dicts (names as the objective suggests them), one per warm
            trial.
        then: the sampler after (and beside) the warm configurations: an Optuna sampler,
            ``"gp"`` (the project's GP-BO) or None (``TPESampler(seed=seed)``).
        seed: seeds the default ``then`` and ``"gp"``.
    """

    def __init__(self, warm: Sequence[Mapping[str, Any]], *, then: BaseSampler | Literal["gp"] | None = None,
                 seed: int | None = None) -> None:
        if isinstance(warm, Mapping) or not all(isinstance(w, Mapping) for w in warm):
            raise InputDataError("warm must be a sequence of parameter dicts, one per warm trial")
        self.warm = tuple(dict(w) for w in warm)
        if then is None:
            then = TPESampler(seed=seed)
        elif then == "gp":
            then = _GPBOSampler(seed)
        elif not isinstance(then, BaseSampler):
            raise InputDataError(f"then must be an Optuna sampler, 'gp' or None, got {then!r}")
        self.then, self.seed = then, seed
        self._warned: set[tuple[int, str]] = set()  # (trial, parameter) fallbacks logged

    def __repr__(self) -> str:
        return f"WarmStartSampler(n_warm={self.n_warm}, then={type(self.then).__name__}, seed={self.seed})"

    @property
    def n_warm(self) -> int:
        """How many warm configurations there are: the first trials take them, in order."""
        return len(self.warm)

    @classmethod
    def from_kb(
        cls, source: KnowledgeBase | PastRuns, *, dataset_id: str | None = None,
        meta_features: Mapping[str, float] | pd.Series | None = None, algorithm: str | Sequence[str] | None = None,
        param_names: Mapping[str, str] | None = None, k: int = 5, metric: str = "error_rate",
        then: BaseSampler | Literal["gp"] | None = None, seed: int | None = None,
        method: Literal["warm", "knn"] = "warm", n_warm: int = 8,
    ) -> WarmStartSampler:
        """The sampler warm-started by the default warm start's portfolio of ``n_warm``
        configurations (``method="warm"``), or by the best configurations of the ``k``
        past tasks nearest to the new one (``method="knn"``,
        :class:`~metabo.strategies.knn.KNNWarmStart`).

        Args:
            source: the knowledge base, or past runs already loaded (then give
                ``meta_features``).
            dataset_id: the new task as a stored dataset (id or name) with meta-features;
                the tasks holding the same data are left out of the past
                (:func:`~metabo.strategies.warm.past_for`).
            meta_features: or the new task's meta-features
                (:func:`~metabo.data.meta_features.compute_meta_features`).
            algorithm: one algorithm: the Optuna names are its hyperparameters' names; several
                (None: every algorithm of the project): a CASH objective, ``"algorithm"``
                and ``"<algorithm>:<hyperparameter>"`` (the project's ConfigSpace names).
            param_names: Optuna name -> the project's name, where they differ.
            k, metric: the nearest tasks (knn) and the metric the past runs minimize.
            method, n_warm: the warm start (module docstring) and the portfolio's size.
        """
        from metabo.kb.past import PastRuns
        from metabo.space.algorithms import default_cash_space
        from metabo.strategies.knn import KNNWarmStart
        from metabo.strategies.portfolio import PortfolioWarmStart
        from metabo.strategies.warm import past_for, stored_meta_features
        from metabo.tuning.registry import resolve_strategy

        if method not in ("warm", "knn"):
            raise InputDataError(f"method must be 'warm' or 'knn', got {method!r}")
        if (dataset_id is None) == (meta_features is None):
            raise InputDataError("give dataset_id (a stored dataset with meta-features) or meta_features "
                                 "(e.g. metabo.data.meta_features.compute_meta_features(dataset)), one of them")
        names = None if algorithm is None else [algorithm] if isinstance(algorithm, str) else list(algorithm)
        space = default_cash_space(names)
        if isinstance(source, PastRuns) and dataset_id is not None:
            raise InputDataError("with past runs give meta_features (dataset_id needs the knowledge base)")
        if method == "warm":
            if isinstance(source, PastRuns):
                past = source.only(algorithms=space.algorithms)
            elif dataset_id is not None:
                resolved = source.resolve_dataset(dataset_id)
                past = past_for(source, resolved, space, metric=metric)
                meta_features = stored_meta_features(source, resolved)
            else:
                past = PastRuns.from_kb(source, metric=metric, algorithms=list(space.algorithms))
            configs = PortfolioWarmStart(past, meta_features or None).portfolio(space, n_warm)
            logger.info("warm start: a portfolio of %d configurations from %d past tasks", len(configs),
                        len(past.tasks))
        else:
            if isinstance(source, PastRuns):
                knn = KNNWarmStart(source.only(algorithms=space.algorithms), meta_features, k=k)
            elif dataset_id is not None:
                knn = cast(KNNWarmStart, resolve_strategy("knn", source, source.resolve_dataset(dataset_id), space,
                                                          metric=metric, options={"k": k})[2](0))
            else:
                past = PastRuns.from_kb(source, metric=metric, algorithms=list(space.algorithms))
                knn = KNNWarmStart(past, meta_features, k=k)
            configs = [config for config, _, _ in knn.design(space)]
            logger.info("warm start: %d configurations from the %d nearest tasks", len(configs), k)
        renamed = _renaming(param_names or {})
        warm = [_optuna_params(config, cash=not isinstance(algorithm, str), rename=renamed) for config in configs]
        return cls(warm, then=then, seed=seed)

    # -- the sampler contract ---------------------------------------------------------
    def infer_relative_search_space(self, study: Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        """The fallback sampler's relative search space."""
        return self.then.infer_relative_search_space(study, trial)

    def sample_relative(self, study: Study, trial: FrozenTrial,
                        search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        """The warm values of ``search_space``'s parameters for a warm trial (those its
        distributions hold), the fallback sampler's for the rest."""
        self._check(study)
        warm = {}
        for name, distribution in search_space.items():
            value = self._warm_value(trial, name, distribution)
            if value is not _MISSING:
                warm[name] = value
        rest = {n: d for n, d in search_space.items() if n not in warm}
        return {**(self.then.sample_relative(study, trial, rest) if rest else {}), **warm}

    def sample_independent(self, study: Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        """The warm configuration's value of ``param_name`` for a warm trial, else the fallback sampler's."""
        self._check(study)
        value = self._warm_value(trial, param_name, param_distribution)
        if value is _MISSING:
            return self.then.sample_independent(study, trial, param_name, param_distribution)
        return value

    def before_trial(self, study: Study, trial: FrozenTrial) -> None:
        """Pass on to the fallback sampler."""
        self.then.before_trial(study, trial)

    def after_trial(self, study: Study, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None) -> None:
        """Pass on to the fallback sampler."""
        self.then.after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        """Reseed the fallback sampler."""
        self.then.reseed_rng()

    def _check(self, study: Study) -> None:
        """``"gp"`` refuses a multi-objective study from the first trial on."""
        if isinstance(self.then, _GPBOSampler):
            self.then._raise_error_if_multi_objective(study)

    def _warm_value(self, trial: FrozenTrial, name: str, distribution: BaseDistribution) -> Any:
        """Trial ``trial``'s warm value of ``name`` if ``distribution`` holds it, else _MISSING."""
        if trial.number >= self.n_warm or name not in self.warm[trial.number]:
            return _MISSING
        value = _contained(self.warm[trial.number][name], distribution)
        if value is _MISSING and (trial.number, name) not in self._warned:
            self._warned.add((trial.number, name))
            logger.warning("trial %d: warm value %s=%r is outside %s; sampled by %s instead", trial.number, name,
                           self.warm[trial.number][name], distribution, type(self.then).__name__)
        return value


def _contained(value: Any, distribution: BaseDistribution) -> Any:
    """``value`` as ``distribution``'s type (a choice itself, an int, a float) if it holds
    it; ``_MISSING`` otherwise (type-strict for choices: 1, 1.0 and True differ)."""
    if isinstance(distribution, CategoricalDistribution):
        return next((c for c in distribution.choices if same_scalar(c, value)), _MISSING)
    if isinstance(distribution, IntDistribution):
        if not (is_integer(value) or is_real(value) and float(value).is_integer()):
            return _MISSING
        value = int(value)
    elif isinstance(distribution, FloatDistribution) and is_real(value):
        value = float(value)
    else:
        return _MISSING
    try:  # to_internal_repr refuses a non-positive value on a log scale
        return value if distribution._contains(distribution.to_internal_repr(value)) else _MISSING
    except ValueError:
        return _MISSING


def _renaming(param_names: Mapping[str, str]) -> dict[str, str]:
    """The project's name -> Optuna name, from Optuna name -> the project's name."""
    inverse = {project: name for name, project in param_names.items()}
    if len(inverse) != len(param_names):
        raise InputDataError(f"param_names maps two Optuna names to one hyperparameter: {dict(param_names)}")
    return inverse


def _optuna_params(config: Config, *, cash: bool, rename: Mapping[str, str]) -> dict[str, Any]:
    """A project configuration as Optuna parameters (names: :meth:`WarmStartSampler.from_kb`)."""
    from metabo.space.cash import ALGORITHM

    algorithm, params = config
    named = {f"{algorithm}:{h}" if cash else h: v for h, v in params.items()}
    if cash:
        named = {ALGORITHM: algorithm, **named}
    return {rename.get(n, n): v for n, v in named.items()}


# -- "gp": the project's GP-BO as an Optuna sampler ------------------------------------
def _stepped(d: BaseDistribution) -> bool:
    """A grid other than the integers: a float with a step, an integer with a step above 1."""
    return (isinstance(d, FloatDistribution) and d.step is not None) or (isinstance(d, IntDistribution) and d.step != 1)


def _hyperparameter(name: str, d: BaseDistribution) -> Hyperparameter:
    """The project's hyperparameter for an Optuna distribution (module docstring)."""
    from metabo.space.hyperparameters import Categorical, Float, Integer

    if isinstance(d, CategoricalDistribution):
        return Categorical(name, tuple(range(len(d.choices))))
    if isinstance(d, (IntDistribution, FloatDistribution)) and _stepped(d):
        assert d.step is not None  # _stepped: it has a step
        return Integer(name, 0, int(round((d.high - d.low) / d.step)))
    if isinstance(d, IntDistribution):
        return Integer(name, d.low, d.high, log=d.log)
    if isinstance(d, FloatDistribution):
        return Float(name, d.low, d.high, log=d.log)
    raise InputDataError(f"'gp' cannot model {name!r} ({d}); use an Optuna sampler as then")


def _to_project(value: Any, d: BaseDistribution) -> Any:
    x = d.to_internal_repr(value)
    if isinstance(d, CategoricalDistribution):
        return int(x)
    if isinstance(d, (IntDistribution, FloatDistribution)) and _stepped(d):
        assert d.step is not None  # _stepped: it has a step
        return int(round((x - d.low) / d.step))
    return int(x) if isinstance(d, IntDistribution) else float(x)


def _to_optuna(value: Any, d: BaseDistribution) -> Any:
    if isinstance(d, CategoricalDistribution):
        return d.choices[value]
    assert isinstance(d, (IntDistribution, FloatDistribution))  # the others _hyperparameter refuses
    x = d.low + value * d.step if _stepped(d) else value
    return int(x) if isinstance(d, IntDistribution) else float(min(x, d.high))


class _GPBOSampler(BaseSampler):
    """:class:`~metabo.strategies.gp.GPBO` on the intersection search space, random
    sampling elsewhere (module docstring). GP-BO's generator for trial ``n`` is seeded by
    ``(seed, n)``, so workers sharing a storage agree."""

    def __init__(self, seed: int | None) -> None:
        from metabo.strategies.gp import GPBO

        self._seed = int(np.random.SeedSequence(seed).generate_state(1)[0])
        self._gp = GPBO(n_init=0, seed=self._seed)
        self._random = RandomSampler(seed)
        self._intersection = IntersectionSearchSpace()

    def infer_relative_search_space(self, study: Study, trial: FrozenTrial) -> dict[str, BaseDistribution]:
        return {n: d for n, d in self._intersection.calculate(study).items() if not d.single()}

    def sample_relative(self, study: Study, trial: FrozenTrial,
                        search_space: dict[str, BaseDistribution]) -> dict[str, Any]:
        from metabo.kb.canonical import config_id
        from metabo.optimizer.history import History, TrialRecord
        from metabo.space.cash import CASHSpace
        from metabo.space.space import SearchSpace

        self._raise_error_if_multi_objective(study)
        if not search_space:
            return {}
        space = CASHSpace({_ALGORITHM: SearchSpace(_ALGORITHM, tuple(
            _hyperparameter(n, d) for n, d in search_space.items()))})
        sign = -1.0 if study.direction == StudyDirection.MAXIMIZE else 1.0
        records: list[TrialRecord] = []
        states = (TrialState.COMPLETE, TrialState.FAIL, TrialState.RUNNING)
        for t in study.get_trials(deepcopy=False, states=states):
            if t.number == trial.number or any(t.distributions.get(n) != d for n, d in search_space.items()):
                continue  # this trial, or one in another space (or not sampled that far yet)
            params = {n: _to_project(t.params[n], d) for n, d in search_space.items()}
            outcome: dict[str, Any] = {}  # a running trial is pending: told the constant lie below
            if t.state == TrialState.COMPLETE:
                assert t.value is not None  # a complete single-objective trial has its value
                outcome = {"state": "complete", "value": sign * float(t.value), "status": "ok"}
            elif t.state == TrialState.FAIL:
                outcome = {"state": "complete", "status": "crash"}
            records.append(TrialRecord(len(records), _ALGORITHM, params, config_id(_ALGORITHM, params), **outcome))
        rng = np.random.default_rng([self._seed, trial.number])
        try:
            # other workers' running trials as constant lies (Ginsbourger et al. 2010), as
            # the Optimizer shows them to its strategies
            _, params = self._gp.suggest(History(records).with_lies("max"), space, rng)
        except InputDataError as e:  # GP-BO never repeats a configuration; Optuna may
            logger.info("trial %d: %s; sampled at random", trial.number, e)
            return {}
        return {n: _to_optuna(params[n], d) for n, d in search_space.items()}

    def sample_independent(self, study: Study, trial: FrozenTrial, param_name: str,
                           param_distribution: BaseDistribution) -> Any:
        return self._random.sample_independent(study, trial, param_name, param_distribution)

    def reseed_rng(self) -> None:
        self._random.reseed_rng()


__all__ = ["WarmStartSampler"]
