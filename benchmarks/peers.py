"""Peer optimizers (and this project's) on a :class:`SyntheticFunction`, ask/tell style.

Every optimizer is wrapped as a :class:`Suggester`: ``ask() -> (algorithm, params)``,
``tell(value)`` for the last asked configuration, ``observe(configs, values)`` to feed
results it did not ask for (used to time a suggestion after ``n`` random observations).

Mapping of the CASH space (root ``algorithm``, then the chosen algorithm's parameters):

- Optuna (TPE, GP): define-by-run, ``suggest_categorical("algorithm")`` then the
  branch's active parameters (named ``<algorithm>:<name>``); conditionals follow from
  the values already suggested. Optuna's GPSampler models the intersection search space
  of the completed trials only, so on a conditional space the branch parameters are
  sampled by its independent (random) sampler.
- scikit-optimize (GP, EI; its default ``gp_hedge`` optimizes three acquisition
  functions per step, about three times slower): one flat space (the root categorical and every algorithm's
  parameters); inactive dimensions are ignored when decoding and imputed with their
  defaults when telling.
- SMAC3 (HPO facade, random forest): ``space.to_configspace()``, the auto-sklearn form.
- metabo: :class:`metabo.optimizer.Optimizer` with a strategy from
  :mod:`metabo.strategies` (``random``, ``gp`` = ``GPBO(kernel="conditional")``).

A one-algorithm space is given to every peer without its constant root.

Timing (:func:`run`): the seconds of one suggestion are those of ``tell`` (the previous
value) plus ``ask``, so peers that fit in ``tell`` (scikit-optimize) and those that fit
in ``ask`` (Optuna, SMAC, metabo) are measured alike; the objective itself is excluded.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import logging
import shutil
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Protocol

import numpy as np

from benchmarks.functions import Config, SyntheticFunction
from metabo.exceptions import InputDataError
from metabo.space.cash import ALGORITHM, CASHSpace
from metabo.space.hyperparameters import Categorical, Constant, Float, Hyperparameter, Integer
from metabo.space.space import SearchSpace

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def _keep_loggers_enabled() -> Iterator[None]:
    """SMAC3 configures logging (``logging.config.dictConfig`` and the root logger's level)
    when imported and when a facade starts; put back the level and the ``disabled`` flag of
    the root logger and of every logger that existed before, the project's among them."""
    loggers = [logging.root] + [lg for lg in logging.root.manager.loggerDict.values() if isinstance(lg, logging.Logger)]
    before = [(lg, lg.level, lg.disabled) for lg in loggers]
    try:
        yield
    finally:
        for lg, level, disabled in before:
            lg.setLevel(level)
            lg.disabled = disabled


class Suggester(Protocol):
    """An optimizer seen through ask/tell (module docstring)."""

    def ask(self) -> Config: ...

    def tell(self, value: float) -> None: ...

    def observe(self, configs: Sequence[Config], values: Sequence[float]) -> None: ...

    def close(self) -> None: ...


@dataclass(frozen=True)
class Trace:
    """One run: the value of each evaluation and the seconds of each suggestion."""

    optimizer: str
    function: str
    seed: int
    values: tuple[float, ...]
    seconds: tuple[float, ...]

    def best_so_far(self) -> np.ndarray:
        return np.minimum.accumulate(np.asarray(self.values, dtype=float))


# ----------------------------------------------------------------- helpers
def _active_params(space: SearchSpace, values: Mapping[str, Any]) -> dict[str, Any]:
    """The active part of a full assignment ``values`` (every parameter has a value)."""
    params: dict[str, Any] = {}
    while True:
        new = [n for n in space.names if n in space.active(params) and n not in params]
        if not new:
            return space.normalize(params)
        for name in new:
            params[name] = values[name]


def _plain(hp: Hyperparameter, value: Any) -> Any:
    """A peer's value (numpy scalar, string label) as the space's Python value."""
    if isinstance(hp, Float):
        return float(value)
    if isinstance(hp, Integer):
        return int(value)
    if isinstance(hp, Categorical):
        labels = [str(c) for c in hp.choices]
        return hp.choices[labels.index(str(value))]
    return hp.default


def _names(space: CASHSpace) -> dict[str, dict[str, str]]:
    """The flat name of each parameter: ``<algorithm>:<name>``, or ``<name>`` alone for a
    one-algorithm space."""
    single = len(space) == 1
    return {a: {hp.name: hp.name if single else f"{a}:{hp.name}" for hp in s} for a, s in space.spaces.items()}


# ----------------------------------------------------------------- Optuna
def _optuna_suggest(trial: Any, name: str, hp: Hyperparameter) -> Any:
    if isinstance(hp, Float):
        return trial.suggest_float(name, hp.low, hp.high, log=hp.log)
    if isinstance(hp, Integer):
        return trial.suggest_int(name, hp.low, hp.high, log=hp.log)
    if isinstance(hp, Categorical):
        return trial.suggest_categorical(name, list(hp.choices))
    return trial.suggest_categorical(name, [hp.value])


class OptunaSuggester:
    """Optuna's ask-and-tell interface, define-by-run over the CASH space."""

    def __init__(self, fn: SyntheticFunction | CASHSpace, seed: int, sampler: str = "tpe") -> None:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.ERROR)
        if sampler == "tpe":
            s = optuna.samplers.TPESampler(seed=seed)
        elif sampler == "gp":
            s = optuna.samplers.GPSampler(seed=seed, warn_independent_sampling=False)
        else:
            raise InputDataError(f"Optuna sampler must be 'tpe' or 'gp', got {sampler!r}")
        self._optuna = optuna
        self.space = fn if isinstance(fn, CASHSpace) else fn.space
        self.names = _names(self.space)
        self.study = optuna.create_study(direction="minimize", sampler=s)
        self._trial: Any = None

    def _distribution(self, hp: Hyperparameter) -> Any:
        d = self._optuna.distributions
        if isinstance(hp, Float):
            return d.FloatDistribution(hp.low, hp.high, log=hp.log)
        if isinstance(hp, Integer):
            return d.IntDistribution(hp.low, hp.high, log=hp.log)
        if isinstance(hp, Categorical):
            return d.CategoricalDistribution(hp.choices)
        return d.CategoricalDistribution([hp.value])

    def ask(self) -> Config:
        trial = self.study.ask()
        algorithms = list(self.space.algorithms)
        algorithm = algorithms[0] if len(algorithms) == 1 else trial.suggest_categorical(ALGORITHM, algorithms)
        space, names = self.space[algorithm], self.names[algorithm]
        params: dict[str, Any] = {}
        while True:  # define-by-run: a child once its parent's value activates it
            new = [hp for hp in space if hp.name in space.active(params) and hp.name not in params]
            if not new:
                break
            for hp in new:
                params[hp.name] = _optuna_suggest(trial, names[hp.name], hp)
        self._trial = trial
        return algorithm, space.normalize(params)

    def tell(self, value: float) -> None:
        self.study.tell(self._trial, value)

    def discard(self) -> None:
        """End the last asked trial as failed: Optuna's samplers learn from complete
        trials only, so it leaves no trace (the lookup benchmark records the candidate
        actually evaluated with :meth:`observe` instead)."""
        self.study.tell(self._trial, state=self._optuna.trial.TrialState.FAIL)

    def observe(self, configs: Sequence[Config], values: Sequence[float]) -> None:
        d = self._optuna.distributions
        for (algorithm, params), value in zip(configs, values, strict=True):
            flat: dict[str, Any] = {}
            dists: dict[str, Any] = {}
            if len(self.space) > 1:
                flat[ALGORITHM] = algorithm
                dists[ALGORITHM] = d.CategoricalDistribution(list(self.space.algorithms))
            for name, v in params.items():
                key = self.names[algorithm][name]
                flat[key], dists[key] = v, self._distribution(self.space[algorithm][name])
            self.study.add_trial(self._optuna.trial.create_trial(params=flat, distributions=dists, value=value))

    def close(self) -> None:
        pass


# ----------------------------------------------------------------- scikit-optimize
class SkoptSuggester:
    """scikit-optimize's ``Optimizer`` with a GP on the flat space (module docstring)."""

    def __init__(self, fn: SyntheticFunction, seed: int, n_initial_points: int = 10) -> None:
        import skopt
        from skopt import space as sk

        self.space = fn.space
        self.names = _names(fn.space)
        dims: list[Any] = []
        self.index: list[tuple[str, Hyperparameter]] = []  # (algorithm, hp) of each dim past the root
        if len(self.space) > 1:
            dims.append(sk.Categorical(list(self.space.algorithms), name=ALGORITHM))
        for algorithm, s in self.space.spaces.items():
            for hp in s:
                if isinstance(hp, Constant):
                    continue
                name = self.names[algorithm][hp.name]
                if isinstance(hp, Float):
                    dims.append(sk.Real(hp.low, hp.high, prior="log-uniform" if hp.log else "uniform", name=name))
                elif isinstance(hp, Integer):
                    dims.append(sk.Integer(hp.low, hp.high, prior="log-uniform" if hp.log else "uniform", name=name))
                else:
                    dims.append(sk.Categorical([str(c) for c in hp.choices], name=name))
                self.index.append((algorithm, hp))
        self.opt = skopt.Optimizer(
            dims, base_estimator="GP", acq_func="EI", n_initial_points=n_initial_points, random_state=seed
        )
        self._x: list[Any] | None = None

    def _decode(self, x: Sequence[Any]) -> Config:
        offset = 1 if len(self.space) > 1 else 0
        algorithm = str(x[0]) if offset else self.space.algorithms[0]
        space = self.space[algorithm]
        values = {hp.name: hp.default for hp in space}
        for (a, hp), v in zip(self.index, x[offset:], strict=True):
            if a == algorithm:
                values[hp.name] = _plain(hp, v)
        return algorithm, _active_params(space, values)

    def _encode(self, algorithm: str, params: Mapping[str, Any]) -> list[Any]:
        x: list[Any] = [algorithm] if len(self.space) > 1 else []
        for a, hp in self.index:
            v = params.get(hp.name, hp.default) if a == algorithm else hp.default
            x.append(str(v) if isinstance(hp, Categorical) else v)
        return x

    def ask(self) -> Config:
        self._x = self.opt.ask()
        return self._decode(self._x)

    def tell(self, value: float) -> None:
        self.opt.tell(self._x, float(value))

    def observe(self, configs: Sequence[Config], values: Sequence[float]) -> None:
        if configs:
            self.opt.tell([self._encode(a, p) for a, p in configs], [float(v) for v in values])

    def close(self) -> None:
        pass


# ----------------------------------------------------------------- SMAC3
class SmacSuggester:
    """SMAC3's hyperparameter-optimization facade (random forest, local + random search
    of EI, Sobol initial design) through ask/tell.

    ``n_trials`` is SMAC's budget (it sizes the initial design, a quarter of it at most);
    ``initial_design=False`` drops the initial design (for timing after observations).
    """

    def __init__(self, fn: SyntheticFunction, seed: int, n_trials: int = 50, initial_design: bool = True) -> None:
        with _keep_loggers_enabled():  # importing smac configures logging too
            from smac import HyperparameterOptimizationFacade as HPO
            from smac import Scenario
            from smac.model.random_forest import RandomForest

        self.space = fn.space
        single = len(self.space) == 1
        self.cs = self.space[self.space.algorithms[0]].to_configspace() if single else self.space.to_configspace()
        self._dir = tempfile.mkdtemp(prefix="metabo-smac-")
        scenario = Scenario(self.cs, deterministic=True, n_trials=n_trials, seed=seed, output_directory=self._dir)
        design = (
            HPO.get_initial_design(scenario)
            if initial_design
            else HPO.get_initial_design(scenario, n_configs=0, additional_configs=[])
        )
        # The facade's forest (HPO.get_model's settings) with n_jobs=1: its default -1 starts a
        # thread pool for every prediction, slower here and not single-threaded.
        model = RandomForest(
            scenario.configspace, log_y=True, n_trees=10, bootstrapping=True, ratio_features=1.0,
            min_samples_split=2, min_samples_leaf=1, max_depth=2**20,
            instance_features=scenario.instance_features, seed=scenario.seed, n_jobs=1,
        )
        with warnings.catch_warnings(), _keep_loggers_enabled():
            warnings.simplefilter("ignore")
            self.smac = HPO(
                scenario, _no_target, model=model, initial_design=design, overwrite=True, logging_level=40
            )
        self._info: Any = None

    def _decode(self, config: Any) -> Config:
        values = dict(config)
        if len(self.space) == 1:
            algorithm = self.space.algorithms[0]
            return algorithm, self.space[algorithm].normalize(values)
        algorithm = values.pop(ALGORITHM)
        prefix = f"{algorithm}:"
        return algorithm, self.space[algorithm].normalize(
            {k[len(prefix):]: v for k, v in values.items() if k.startswith(prefix)}
        )

    def _encode(self, algorithm: str, params: Mapping[str, Any]) -> Any:
        from ConfigSpace import Configuration

        if len(self.space) == 1:
            return Configuration(self.cs, values=dict(params))
        return Configuration(self.cs,
                             values={ALGORITHM: algorithm, **{f"{algorithm}:{k}": v for k, v in params.items()}})

    def ask(self) -> Config:
        self._info = self.smac.ask()
        return self._decode(self._info.config)

    def tell(self, value: float) -> None:
        from smac.runhistory.dataclasses import TrialValue

        self.smac.tell(self._info, TrialValue(cost=float(value)), save=False)

    def observe(self, configs: Sequence[Config], values: Sequence[float]) -> None:
        from smac.runhistory.dataclasses import TrialInfo, TrialValue

        for (a, p), v in zip(configs, values, strict=True):
            self.smac.tell(TrialInfo(self._encode(a, p), seed=0), TrialValue(cost=float(v)), save=False)

    def close(self) -> None:
        shutil.rmtree(self._dir, ignore_errors=True)


def _no_target(config: Any, seed: int = 0) -> float:  # pragma: no cover - ask/tell only
    raise RuntimeError("SMAC is driven by ask/tell here; the target function is never called")


# ----------------------------------------------------------------- metabo
class _Feed:
    """A strategy that first replays queued configurations (the observations fed to the
    optimizer), then defers to ``strategy``."""

    def __init__(self, strategy: Any) -> None:
        self.strategy, self.queue = strategy, []
        self.name = strategy.name

    def suggest(self, history: Any, space: CASHSpace, rng: np.random.Generator) -> Config:
        if self.queue:
            return self.queue.pop(0)
        return self.strategy.suggest(history, space, rng)


class MetaboSuggester:
    """:class:`metabo.optimizer.Optimizer` with ``strategy`` (``random`` or ``gp``)."""

    def __init__(self, fn: SyntheticFunction, seed: int, strategy: str = "gp", **kwargs: Any) -> None:
        from metabo.optimizer.optimizer import Optimizer
        from metabo.strategies import GPBO, RandomSearch

        if strategy == "random":
            inner: Any = RandomSearch()
        elif strategy == "gp":
            inner = GPBO(kernel="conditional", seed=seed, **kwargs)
        elif strategy == "gp-dense":
            inner = GPBO(kernel="dense", seed=seed, **kwargs)
        else:
            raise InputDataError(f"metabo strategy must be 'random', 'gp' or 'gp-dense', got {strategy!r}")
        self._feed = _Feed(inner)
        self.opt = Optimizer(fn.space, self._feed, seed=seed)
        self._trial: Any = None

    def ask(self) -> Config:
        self._trial = self.opt.ask()
        return self._trial.algorithm, dict(self._trial.params)

    def tell(self, value: float) -> None:
        self.opt.tell(self._trial, float(value))

    def observe(self, configs: Sequence[Config], values: Sequence[float]) -> None:
        for config, value in zip(configs, values, strict=True):
            self._feed.queue.append(config)
            self.opt.tell(self.opt.ask(), float(value))

    def close(self) -> None:
        pass


# ----------------------------------------------------------------- registry
Factory = Callable[[SyntheticFunction, int, int], Suggester]

#: Optimizers by name: ``factory(fn, seed, budget)``, the packages each needs.
OPTIMIZERS: Mapping[str, tuple[Factory, tuple[str, ...]]] = MappingProxyType(
    {
        "random": (lambda fn, seed, budget: MetaboSuggester(fn, seed, "random"), ()),
        "metabo-gp": (lambda fn, seed, budget: MetaboSuggester(fn, seed, "gp"), ()),
        "metabo-gp-dense": (lambda fn, seed, budget: MetaboSuggester(fn, seed, "gp-dense"), ()),
        "metabo-gp-nowarp": (lambda fn, seed, budget: MetaboSuggester(fn, seed, "gp", warping="none"), ()),
        "optuna-tpe": (lambda fn, seed, budget: OptunaSuggester(fn, seed, "tpe"), ("optuna",)),
        "optuna-gp": (lambda fn, seed, budget: OptunaSuggester(fn, seed, "gp"), ("optuna", "torch")),
        "skopt-gp": (lambda fn, seed, budget: SkoptSuggester(fn, seed), ("scikit-optimize",)),
        "smac": (lambda fn, seed, budget: SmacSuggester(fn, seed, n_trials=budget), ("smac",)),
    }
)


def available(name: str) -> str | None:
    """None when optimizer ``name`` can run here, else the reason (a missing package or
    a failing import)."""
    if name not in OPTIMIZERS:
        return f"unknown optimizer {name!r}; valid: {list(OPTIMIZERS)}"
    modules = {"scikit-optimize": "skopt", "smac": "smac", "optuna": "optuna", "torch": "torch"}
    for package in OPTIMIZERS[name][1]:
        try:
            importlib.import_module(modules[package])
        except Exception as e:  # noqa: BLE001 - any import failure means "not available"
            return f"{package}: {type(e).__name__}: {e}"
    if name.startswith("metabo-") or name == "random":
        try:
            importlib.import_module("metabo.optimizer.optimizer")
            importlib.import_module("metabo.strategies")
        except Exception as e:  # noqa: BLE001
            return f"metabo.optimizer: {type(e).__name__}: {e}"
    return None


def versions(names: Sequence[str]) -> dict[str, str]:
    """Installed versions of the packages behind ``names``."""
    out: dict[str, str] = {}
    for name in names:
        for package in OPTIMIZERS[name][1]:
            try:
                out[package] = importlib.metadata.version(package)
            except importlib.metadata.PackageNotFoundError:
                out[package] = "missing"
    return out


def make(name: str, fn: SyntheticFunction, seed: int, budget: int) -> Suggester:
    """Optimizer ``name`` on ``fn``; :class:`InputDataError` when unknown."""
    if name not in OPTIMIZERS:
        raise InputDataError(f"unknown optimizer {name!r}; valid: {list(OPTIMIZERS)}")
    return OPTIMIZERS[name][0](fn, seed, budget)


# ----------------------------------------------------------------- runs
def run(name: str, fn: SyntheticFunction, budget: int, seed: int) -> Trace:
    """``budget`` evaluations of ``fn`` by optimizer ``name`` (timing: module docstring)."""
    opt = make(name, fn, seed, budget)
    values: list[float] = []
    seconds: list[float] = []
    try:
        for i in range(budget):
            start = time.perf_counter()
            if i:
                opt.tell(values[-1])
            algorithm, params = opt.ask()
            seconds.append(time.perf_counter() - start)
            values.append(fn(algorithm, params))
    finally:
        opt.close()
    return Trace(name, fn.name, seed, tuple(values), tuple(seconds))


def suggestion_seconds(
    name: str, fn: SyntheticFunction, n_observations: int, seed: int, window: int = 10
) -> dict[str, float]:
    """Seconds per suggestion after ``n_observations`` uniform random observations.

    The first ``n - 1`` are fed untimed; then ``first``: ``observe`` of the last one plus
    ``ask`` (a cold start: no model or cache from an earlier suggestion); then the loop
    runs on, each suggestion evaluated and told, and ``steady`` is the mean seconds of
    ``tell + ask`` over the next ``window`` suggestions (as in :func:`run`: warm starts and
    caches at work, periodic refits from scratch amortized over the window).
    """
    if n_observations < 1 or window < 1:
        raise InputDataError(f"n_observations and window must be >= 1, got {n_observations}, {window}")
    configs = fn.space.sample(np.random.default_rng([seed, n_observations]), n_observations)
    values = [fn(a, p) for a, p in configs]
    if name == "smac":
        opt: Suggester = SmacSuggester(fn, seed, n_trials=n_observations + window + 10, initial_design=False)
    else:
        opt = make(name, fn, seed, n_observations + window + 1)
    try:
        opt.observe(configs[:-1], values[:-1])
        start = time.perf_counter()
        opt.observe(configs[-1:], values[-1:])
        config = opt.ask()
        first = time.perf_counter() - start
        steady = 0.0
        for _ in range(window):
            value = fn(*config)  # the suggestion must be valid
            start = time.perf_counter()
            opt.tell(value)
            config = opt.ask()
            steady += time.perf_counter() - start
        fn(*config)
    finally:
        opt.close()
    return {"first": first, "steady": steady / window}


__all__ = [
    "OPTIMIZERS",
    "MetaboSuggester",
    "OptunaSuggester",
    "SkoptSuggester",
    "SmacSuggester",
    "Suggester",
    "Trace",
    "available",
    "make",
    "run",
    "suggestion_seconds",
]
