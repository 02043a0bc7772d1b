"""Evaluation protocols: how a dataset is cut into training, validation and test rows.

Notation: n rows, K classes, ``codes`` the length-n class codes of the target. A
protocol's :meth:`splits` returns one :class:`Split` per model to train (1 for a
holdout, k for k-fold); each split holds sorted row positions into the dataset.

Three protocols:

- :class:`Holdout`: one fixed train/valid(/test) split. It depends only on the seed
  given to :meth:`Holdout.splits`, so every configuration evaluated with that seed sees
  the same rows (the comparison between configurations is paired).
- :class:`KFold`: k folds; split ``i`` validates on fold ``i`` and trains on the rest.
  No test part by default: cross-validation spends all rows on the estimate. Given a
  ``test`` fraction, a stratified test part is set aside first (from the same seed) and
  shared by every fold, the folds then partition the remaining rows; each fold's model
  is scored on that same test part.
- :class:`ReshuffledHoldout` (thesis 3.2.1): a new train/validation split at each
  optimization iteration. The caller names its iteration with ``iteration=t`` (or
  ``protocol.at(t)``); the split is drawn from ``SeedSequence([seed, t])``, so it changes
  with ``t`` and is reproducible from ``(seed, t)``, which the split records as
  ``split_seed = seed`` and ``repeat = t``. A ``test`` part, if any, is drawn from
  ``seed`` alone and stays fixed across iterations; only train/valid are reshuffled.

Stratification (default on) is systematic sampling within classes: the members of
class c, in random order, get keys ``(rank + u_c) / n_c`` (``u_c`` uniform in [0, 1)),
all rows are sorted by key and the parts are cut from that order at their exact sizes.
Each part then holds each class in proportion to within one row, and the part sizes are
exact. It falls back gracefully when a class is too small to appear in every part
(fewer members than parts): its keys start at 0 (``u_c = 0``) so its first member goes
to the training part; no error is raised for singleton classes, unlike scikit-learn's
stratified splitters. In k-fold a class with fewer than k members simply appears in
fewer than k validation folds.

``max_train`` caps the training part: a stratified, seeded subsample of at most that
many rows (every class present in the training part is kept while ``max_train >= K``).
The training size actually used is recorded as the run's ``fidelity``.

A search's protocol (``cv``, :func:`search_protocol`: ``metabo tune`` and ``tune
--ensemble`` alike):

- ``cv=None``: a stratified 60/20/20 :class:`Holdout`;
- ``cv=k``: a stratified 20% test part and :class:`KFold` k-fold cross-validation of the
  other 80%; a configuration's value is its mean over the k validation folds, so every
  non-test row is validated on, and the winner's curse of picking the best of many
  configurations on one small validation part shrinks (``reports/select``); it costs k
  fits per configuration, each on 80% x (k-1)/k of the rows;
- ``cv="auto"``: k = :data:`AUTO_CV_FOLDS` on datasets of at most
  :data:`AUTO_CV_MAX_ROWS` rows, else the hold-out. The line: up to 3,000 rows a fold
  trains on at most 1,920 rows, where fits take a fraction of a second, so cross-validated
  searches stay within minutes (``reports/ensembles-v2/README.md``); beyond it the
  hold-out's validation part alone holds 600+ rows, and k fits of a larger table cost
  more. FLAML's ``eval_method="auto"`` draws a similar line (cross-validation below 100,000
  rows when rows x columns is small for the time budget) and auto-sklearn offers
  ``resampling_strategy="cv"``; neither uses this exact threshold.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from metabo.data.dataset import Dataset
from metabo.exceptions import InputDataError

#: ``cv="auto"`` cross-validates a search on datasets of at most this many rows (module docstring)
AUTO_CV_MAX_ROWS = 3000
#: the folds of ``cv="auto"``
AUTO_CV_FOLDS = 5


@dataclass(frozen=True, eq=False)
class Split:
    """One train/validation(/test) split: sorted row positions into the dataset."""

    fold: int
    repeat: int
    split_seed: int
    train_idx: np.ndarray = field(repr=False)
    valid_idx: np.ndarray = field(repr=False)
    test_idx: np.ndarray | None = field(default=None, repr=False)

    @property
    def n_train(self) -> int:
        """The number of training rows."""
        return int(len(self.train_idx))


@runtime_checkable
class EvaluationProtocol(Protocol):
    """What :func:`metabo.evaluation.evaluate.evaluate` needs of a protocol."""

    @property
    def max_train(self) -> int | None:
        """The cap on training rows, or None for no cap."""
        ...  # read-only: the protocols are frozen dataclasses

    def splits(self, dataset: Dataset, seed: int) -> list[Split]:
        """The splits of ``dataset`` drawn with ``seed``, the same for the same seed."""
        ...


# ---------------------------------------------------------------------- helpers
def _target(dataset: Dataset) -> pd.Series:
    if dataset.task != "classification":
        raise InputDataError(
            f"dataset {dataset.name!r} is a {dataset.task} task; the evaluation protocols "
            "and metrics here are for classification"
        )
    y = dataset.y
    return y if isinstance(y.dtype, pd.CategoricalDtype) else pd.Series(pd.Categorical(y))


def require_classification(dataset: Dataset, *, target: str | None = None) -> None:
    """Raise :class:`InputDataError`, in one line with the reason, unless ``dataset`` is a
    classification task a protocol can split and a classifier can learn: at least two
    classes, and at least two of them with two rows or more (so that a stratified split
    gives training rows of two classes), and a feature column. ``target`` names the column
    in the message."""
    what = f"the target {target!r}" if target else f"the target of {dataset.name!r}"
    if dataset.n_features == 0:
        raise InputDataError(f"{dataset.name!r} has no feature column besides {what[4:]}: a classifier needs at "
                             "least one")
    if dataset.task != "classification":
        raise InputDataError(f"{what} holds {dataset.y.nunique()} distinct numbers, a regression target; metabo "
                             "tunes classifiers (give a column of class labels)")
    counts = _target(dataset).value_counts()
    counts = counts[counts > 0]
    if len(counts) < 2:
        only = f" ({counts.index[0]!r} in all {int(counts.iloc[0])} rows)" if len(counts) else ""
        raise InputDataError(f"{what} has one class{only}: a classifier needs at least two")
    multi = int((counts >= 2).sum())
    if multi < 2:
        rows = ", ".join(f"{k!r}: {int(v)}" for k, v in counts.head(5).items())
        more = f", and {len(counts) - 5} more of one row" if len(counts) > 5 else ""
        raise InputDataError(f"{what} has {len(counts)} classes but {'only one' if multi else 'none'} of them with "
                             f"two rows or more (rows per class: {rows}{more}): too few rows to split for training "
                             "and validation")


def class_labels(dataset: Dataset) -> pd.Index:
    """The K classes of the target, in the order of its categories (codes 0..K-1)."""
    return _target(dataset).cat.categories


def class_codes(dataset: Dataset) -> np.ndarray:
    """The target as int64 codes ``0..K-1`` in the order of its categories."""
    return _target(dataset).cat.codes.to_numpy(np.int64)


def _check_seed(seed: int) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputDataError(f"a split seed is a non-negative integer, got {seed!r}")
    return int(seed)


def _order(codes: np.ndarray, rng: np.random.Generator, *, stratified: bool, small: float) -> np.ndarray:
    """Positions into ``codes`` in the order parts are cut from (see module docstring).

    Classes with fewer than ``small`` members get ``u_c = 0`` (first member first).
    """
    n = len(codes)
    if not stratified:
        return rng.permutation(n)
    keys = np.empty(n, dtype=np.float64)
    for c in np.unique(codes):
        members = np.flatnonzero(codes == c)
        m = len(members)
        u = 0.0 if m < small else rng.random()
        keys[members] = (rng.permutation(m) + u) / m
    return np.lexsort((rng.random(n), keys))


def _sizes(n: int, fractions: tuple[float, ...]) -> list[int]:
    """Part sizes summing to n, proportional to ``fractions`` (largest remainder), each >= 1."""
    if n < len(fractions):
        raise InputDataError(f"cannot cut {n} rows into {len(fractions)} non-empty parts")
    raw = np.asarray(fractions) * n
    sizes = np.floor(raw).astype(int)
    for i in np.argsort(-(raw - sizes), kind="stable")[: n - sizes.sum()]:
        sizes[i] += 1
    while (sizes == 0).any():
        sizes[np.argmax(sizes)] -= 1
        sizes[np.argmin(sizes)] += 1
    return sizes.tolist()


def _cut(positions: np.ndarray, order: np.ndarray, sizes: list[int]) -> list[np.ndarray]:
    """Cut ``positions[order]`` into consecutive parts of ``sizes``, each sorted."""
    bounds = np.cumsum([0, *sizes])
    return [np.sort(positions[order[a:b]]) for a, b in zip(bounds[:-1], bounds[1:])]


def stratified_subsample(train: np.ndarray, codes: np.ndarray, max_train: int | None,
                         rng: np.random.Generator) -> np.ndarray:
    """At most ``max_train`` rows of ``train`` (sorted), stratified, every class kept first."""
    if max_train is None or len(train) <= max_train:
        return train
    order = _order(codes[train], rng, stratified=True, small=math.inf)
    return np.sort(train[order[:max_train]])


def _check_fractions(obj: object, **fractions: float) -> None:
    for name, f in fractions.items():
        if not 0.0 <= f <= 1.0:
            raise InputDataError(f"{type(obj).__name__}.{name} must be in [0, 1], got {f}")
    if abs(sum(fractions.values()) - 1.0) > 1e-9:
        raise InputDataError(
            f"{type(obj).__name__}: the fractions {fractions} must sum to 1"
        )


def _check_max_train(obj: object, max_train: int | None, name: str = "max_train") -> None:
    if max_train is not None and (isinstance(max_train, bool) or not isinstance(max_train, int) or max_train < 1):
        raise InputDataError(f"{type(obj).__name__}.{name} must be a positive integer or None")


def _hold_out(
    codes: np.ndarray, rows: np.ndarray, fractions: tuple[float, ...], rng: np.random.Generator, stratified: bool
) -> list[np.ndarray]:
    """Cut ``rows`` into parts of the given fractions (small classes to the first part)."""
    order = _order(codes[rows], rng, stratified=stratified, small=len(fractions))
    return _cut(rows, order, _sizes(len(rows), fractions))


# ---------------------------------------------------------------------- protocols
@dataclass(frozen=True, repr=False)
class Holdout:
    """A fixed train/valid/test split of the given fractions (``test=0``: no test part).

    ``max_train`` caps the training rows and ``max_eval`` the validation and the test rows
    (each a stratified subsample, drawn after the training rows so that capping the
    evaluation leaves the training rows as they were): on a large table a trial's
    predictions then cost what its fit on the capped training rows does, not the 40% of
    the table held out (successive halving's rungs, :func:`metabo.tuning.tune`).
    The rows a cap leaves out are in no part; a refit on every non-test row
    (:class:`RefitOnTrainValid`'s users) trains on them."""

    train: float = 0.6
    valid: float = 0.2
    test: float = 0.2
    stratified: bool = True
    max_train: int | None = None
    max_eval: int | None = None

    def __post_init__(self) -> None:
        _check_fractions(self, train=self.train, valid=self.valid, test=self.test)
        if self.train <= 0 or self.valid <= 0:
            raise InputDataError("Holdout needs train > 0 and valid > 0")
        _check_max_train(self, self.max_train)
        _check_max_train(self, self.max_eval, "max_eval")

    def __repr__(self) -> str:
        """The fields, ``max_eval`` only when set: the labels of runs measured before it
        existed (``runs.protocol``, :func:`protocol_label`) stay those of today's protocols."""
        text = (f"Holdout(train={self.train!r}, valid={self.valid!r}, test={self.test!r}, "
                f"stratified={self.stratified!r}, max_train={self.max_train!r}")
        return text + ("" if self.max_eval is None else f", max_eval={self.max_eval!r}") + ")"

    def splits(self, dataset: Dataset, seed: int) -> list[Split]:
        """The one train/valid(/test) split of ``dataset`` drawn with ``seed``, each part capped
        as the protocol says."""
        seed = _check_seed(seed)
        codes = class_codes(dataset)
        rng = np.random.default_rng(seed)
        fractions = (self.train, self.valid, self.test) if self.test > 0 else (self.train, self.valid)
        parts = _hold_out(codes, np.arange(len(codes)), fractions, rng, self.stratified)
        train = stratified_subsample(parts[0], codes, self.max_train, rng)
        valid = stratified_subsample(parts[1], codes, self.max_eval, rng)
        test = stratified_subsample(parts[2], codes, self.max_eval, rng) if self.test > 0 else None
        return [Split(0, 0, seed, train, valid, test)]


@dataclass(frozen=True)
class KFold:
    """k-fold cross-validation, optionally with a shared test part (see module docstring)."""

    k: int = 5
    stratified: bool = True
    test: float | None = None
    max_train: int | None = None

    def __post_init__(self) -> None:
        if isinstance(self.k, bool) or not isinstance(self.k, int) or self.k < 2:
            raise InputDataError(f"KFold.k must be an integer >= 2, got {self.k!r}")
        if self.test is not None and not 0.0 < self.test < 1.0:
            raise InputDataError(f"KFold.test must be in (0, 1) or None, got {self.test}")
        _check_max_train(self, self.max_train)

    def splits(self, dataset: Dataset, seed: int) -> list[Split]:
        """The ``k`` folds of ``dataset`` drawn with ``seed`` (after holding out the test part, if any)."""
        seed = _check_seed(seed)
        codes = class_codes(dataset)
        rng = np.random.default_rng(seed)
        rows, test = np.arange(len(codes)), None
        if self.test:
            rows, test = _hold_out(codes, rows, (1.0 - self.test, self.test), rng, self.stratified)
        order = _order(codes[rows], rng, stratified=self.stratified, small=0)
        folds = _cut(rows, order, _sizes(len(rows), (1.0 / self.k,) * self.k))
        out = []
        for i, valid in enumerate(folds):
            train = np.sort(np.concatenate([f for j, f in enumerate(folds) if j != i]))
            out.append(Split(i, 0, seed, stratified_subsample(train, codes, self.max_train, rng), valid, test))
        return out


@dataclass(frozen=True)
class ReshuffledHoldout:
    """A train/valid split redrawn at each iteration (thesis 3.2.1; see module docstring)."""

    train: float = 0.8
    valid: float = 0.2
    test: float = 0.0
    stratified: bool = True
    max_train: int | None = None
    iteration: int = 0

    def __post_init__(self) -> None:
        _check_fractions(self, train=self.train, valid=self.valid, test=self.test)
        if self.train <= 0 or self.valid <= 0:
            raise InputDataError("ReshuffledHoldout needs train > 0 and valid > 0")
        _check_max_train(self, self.max_train)
        if isinstance(self.iteration, bool) or not isinstance(self.iteration, int) or self.iteration < 0:
            raise InputDataError(f"ReshuffledHoldout.iteration must be an integer >= 0, got {self.iteration!r}")

    def at(self, iteration: int) -> ReshuffledHoldout:
        """The same protocol at optimization iteration ``iteration``."""
        return replace(self, iteration=iteration)

    def splits(self, dataset: Dataset, seed: int) -> list[Split]:
        """The train/valid split of ``dataset`` for the protocol's ``iteration`` (redrawn per
        iteration), after holding out the test part, if any, drawn with ``seed``."""
        seed = _check_seed(seed)
        codes = class_codes(dataset)
        rows, test = np.arange(len(codes)), None
        if self.test > 0:
            rows, test = _hold_out(
                codes, rows, (1.0 - self.test, self.test), np.random.default_rng(seed), self.stratified
            )
        rng = np.random.default_rng(np.random.SeedSequence([seed, self.iteration]))
        total = self.train + self.valid
        train, valid = _hold_out(codes, rows, (self.train / total, self.valid / total), rng, self.stratified)
        train = stratified_subsample(train, codes, self.max_train, rng)
        return [Split(0, self.iteration, seed, train, valid, test)]


@dataclass(frozen=True)
class RefitOnTrainValid:
    """The splits of ``base`` with the validation rows added to the training rows: the
    final model of a tuning, trained on every row that is not test, scored on the test
    part (which ``base`` must have). The validation part is kept only because an
    evaluation needs one; its scores are in-sample and mean nothing."""

    base: Any

    def __post_init__(self) -> None:
        if not isinstance(self.base, EvaluationProtocol):
            raise InputDataError(f"RefitOnTrainValid needs an evaluation protocol, got {self.base!r}")

    @property
    def max_train(self) -> int | None:
        """The base protocol's cap on training rows."""
        return self.base.max_train

    def splits(self, dataset: Dataset, seed: int) -> list[Split]:
        """The base protocol's splits with the validation rows added to the training rows;
        InputDataError if one has no test part."""
        out = []
        for s in self.base.splits(dataset, seed):
            if s.test_idx is None or len(s.test_idx) == 0:
                raise InputDataError(f"{self.base!r} has no test part: there is nothing to score a refit model on")
            out.append(Split(s.fold, s.repeat, s.split_seed, np.union1d(s.train_idx, s.valid_idx), s.valid_idx,
                             s.test_idx))
        return out


# ---------------------------------------------------------------------- a search's protocol
def protocol_label(protocol: EvaluationProtocol) -> str:
    """How a run was measured, as stored in ``runs.protocol``: the protocol's ``repr``
    (kind, fractions or folds, test part, training-row cap), a reshuffled hold-out's
    without its iteration (the run's ``repeat`` holds it)."""
    if isinstance(protocol, ReshuffledHoldout):
        protocol = replace(protocol, iteration=0)
    return repr(protocol)


def parse_cv(value: str) -> int | str | None:
    """``--cv`` as the command line gives it: ``auto``, ``none`` or a number of folds."""
    if value in ("auto", "none"):
        return None if value == "none" else "auto"
    try:
        return int(value)
    except ValueError:
        raise InputDataError(f"--cv takes auto, none or a number of folds >= 2, got {value!r}") from None


def resolve_cv(cv: int | str | None, n_rows: int) -> int | None:
    """The folds of a search's cross-validation (None: the hold-out), ``"auto"`` resolved
    by the dataset's size (module docstring)."""
    if cv == "auto":
        return AUTO_CV_FOLDS if n_rows <= AUTO_CV_MAX_ROWS else None
    if cv is None:
        return None
    if isinstance(cv, bool) or not isinstance(cv, int) or cv < 2:
        raise InputDataError(f"cv must be 'auto', None or an integer >= 2, got {cv!r}")
    return cv


def search_protocol(cv: int | str | None, n_rows: int, *, max_train: int | None = None) -> Holdout | KFold:
    """A search's protocol on a dataset of ``n_rows`` rows: the 60/20/20 hold-out, or k-fold
    cross-validation of the 80% not kept for test (module docstring)."""
    folds = resolve_cv(cv, n_rows)
    if folds is None:
        return Holdout(0.6, 0.2, 0.2, max_train=max_train)
    return KFold(folds, test=0.2, max_train=max_train)
