"""The deployable ensemble an ensemble search finds: a scikit-learn classifier over member
configurations.

Notation: ``m`` distinct members ``(a_j, theta_j)`` (algorithm, params) with weights
``w_j >= 0``, ``sum_j w_j = 1``; ``K`` classes; ``P_j`` the (n, K) probabilities of member
``j`` (column k = class k, as :func:`metabo.evaluation.evaluate.evaluate` computes them).

- Members are built and fitted exactly as ``evaluate`` runs one configuration (registry
  factory, the algorithm's preprocessing pipeline, seeded, thread-limited, warnings
  captured), and refitted on the training and validation rows together, as in Levesque
  (2018) thesis sec. 4.4.1: "Selected hyperparameters are retrained on the whole training
  and validation data, and combined directly on the testing split".
- Repeated members are allowed (ensemble selection picks with replacement): the given
  weights (uniform over the given list by default) are normalized, then the weights of
  identical configurations (same :func:`~metabo.kb.canonical.config_id`) are summed and
  each is fitted once.
- ``combine="average"``: ``P = sum_j w_j P_j`` and the label is ``argmax_k P[:, k]``
  (ensemble selection, Caruana et al. 2004). ``combine="vote"``: each member votes its
  ``argmax_k P_j[:, k]`` with weight ``w_j``, the label is the class of most votes, ties to
  the lowest class index (the majority vote of EO and ESMBO, Lacoste et al. 2014).
  :meth:`EnsembleModel.predict_proba` is ``P`` under both.

Model files: :meth:`EnsembleModel.save` writes a ``skops`` file (``.skops``, the default:
a zip of JSON and arrays whose loading builds only named types) atomically;
:meth:`EnsembleModel.load` reads it with ``skops.io.load``, trusting only the types of
:data:`TRUSTED_TYPES`, and refuses any other type, naming it, before anything is built; a
file this machine wrote or checked before is read from its signed local copy instead
(:mod:`metabo.ensembles.model_cache`: an unpickle of verified bytes, not skops' audit). A joblib pickle (``.joblib``,
``.pkl``, ``.pickle``) runs whatever code it holds when loaded: it is written and read only
with ``trusted=True``, and a file that is not a zip archive is never unpickled without it,
whatever its name.
"""

from __future__ import annotations

import hashlib
import logging
import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, cast

import joblib
import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.utils.validation import check_is_fitted
from threadpoolctl import threadpool_limits

from metabo.data.dataset import Dataset, feature_frame, num_label
from metabo.ensembles.combine import majority_vote
from metabo.ensembles.model_cache import cached_payload, file_digest, keep_payload
from metabo.evaluation.evaluate import class_probabilities, summarize_warnings
from metabo.evaluation.factories import registry_factory
from metabo.evaluation.metrics import get_metric
from metabo.evaluation.preprocessing import make_pipeline
from metabo.evaluation.protocols import (
    EvaluationProtocol,
    RefitOnTrainValid,
    class_codes,
    class_labels,
    stratified_subsample,
)
from metabo.evaluation.runner import describe
from metabo.exceptions import EvaluationError, InputDataError
from metabo.kb.canonical import config_id
from metabo.paths import write_atomic

logger = logging.getLogger(__name__)

FORMAT = "metabo-ensemble"
VERSION = 1
Combine = Literal["average", "vote"]

#: Suffixes of joblib pickles: written and read only with ``trusted=True``.
PICKLE_SUFFIXES = (".joblib", ".pkl", ".pickle")
_ZIP_MAGIC = b"PK\x03\x04"

#: The types beyond skops' own defaults that a model of the default space is made of (the
#: preprocessing's function, the margin classifiers' wrapper, trees, neighbour indexes and
#: their metrics, the MLP optimizers, LightGBM's and XGBoost's boosters, CatBoost's
#: classifier, the boosters' label encoder), the only ones a ``.skops`` file may name.
#: tests/ensembles/test_model_files.py fits every algorithm of the default space and checks
#: that its file names no other.
TRUSTED_TYPES = frozenset({
    "catboost.core.CatBoostClassifier",
    "collections.OrderedDict",
    "numpy.dtype",
    "lightgbm.basic.Booster",
    "lightgbm.sklearn.LGBMClassifier",
    "metabo.evaluation.preprocessing.nominal_as_strings",
    "metabo.space.algorithms.boosting.EncodedLabelsClassifier",
    "metabo.space.algorithms.proba.DecisionProbaClassifier",
    "sklearn.ensemble._hist_gradient_boosting.predictor.TreePredictor",
    "sklearn.metrics._dist_metrics.EuclideanDistance64",
    "sklearn.metrics._dist_metrics.ManhattanDistance64",
    "sklearn.metrics._dist_metrics.MinkowskiDistance64",
    "sklearn.neighbors._ball_tree.BallTree",
    "sklearn.neighbors._kd_tree.KDTree",
    "sklearn.neural_network._stochastic_optimizers.AdamOptimizer",
    "sklearn.neural_network._stochastic_optimizers.SGDOptimizer",
    "sklearn.tree._tree.Tree",
    "xgboost.core.Booster",
    "xgboost.sklearn.XGBClassifier",
})


def is_pickle_path(path: str | os.PathLike[str]) -> bool:
    """Whether ``path``'s suffix names a joblib pickle (:data:`PICKLE_SUFFIXES`)."""
    return Path(path).suffix.lower() in PICKLE_SUFFIXES


def check_model_path(path: str | os.PathLike[str], *, trusted: bool = False) -> Path:
    """``path`` as a place :meth:`EnsembleModel.save` can write to, checked before any work
    that would produce the model: its folder exists, it is not itself a folder, and a pickle
    suffix (:data:`PICKLE_SUFFIXES`) comes with ``trusted``. :class:`InputDataError` otherwise."""
    path = Path(path)
    if path.is_dir():
        raise InputDataError(f"{path} is a folder; give a model file name (e.g. {path / 'model.skops'})")
    if not path.parent.is_dir():
        raise InputDataError(f"no folder {path.parent} to write {path.name} in; create it first")
    if is_pickle_path(path) and not trusted:
        raise InputDataError(
            f"{path}: a joblib/pickle model file runs code when it is loaded; save it as "
            f"{path.with_suffix('.skops')} (safe to load), or pass --trusted (trusted=True) to write joblib")
    return path


def _untrusted(types: Sequence[str]) -> list[str]:
    return sorted(set(types) - TRUSTED_TYPES)


def resolve_members(
    members: Sequence[tuple[str, Mapping[str, Any]]], weights: Sequence[float] | None
) -> tuple[list[tuple[str, dict[str, Any]]], np.ndarray]:
    """The distinct members (first-seen order) and their summed, normalized weights.

    Raises :class:`InputDataError` for no members, a weight count that differs from the
    member count, or weights that are not finite, >= 0 and of positive sum.
    """
    members = [(str(a), dict(p)) for a, p in members]
    if not members:
        raise InputDataError("an ensemble needs at least one member (algorithm, params)")
    w = np.ones(len(members)) if weights is None else np.asarray(weights, dtype=np.float64).ravel()
    if len(w) != len(members):
        raise InputDataError(f"{len(w)} weights for {len(members)} members; give one weight per member")
    if not np.isfinite(w).all() or (w < 0).any() or w.sum() <= 0:
        raise InputDataError(f"ensemble weights must be finite, >= 0 and of positive sum, got {w.tolist()}")
    w = w / w.sum()
    merged: dict[str, tuple[tuple[str, dict[str, Any]], float]] = {}
    for (a, p), wj in zip(cast(list[tuple[str, dict[str, Any]]], members), w):  # the copies made above
        key = config_id(a, p)
        merged[key] = (merged[key][0], merged[key][1] + wj) if key in merged else ((a, p), wj)
    distinct = [m for m, _ in merged.values()]
    return distinct, np.array([wj for _, wj in merged.values()])


class EnsembleModel(ClassifierMixin, BaseEstimator):
    """A weighted ensemble of registered configurations (see module docstring).

    Args:
        members: ``(algorithm, params)`` pairs of :mod:`metabo.space.algorithms`; repeats allowed.
        weights: one per member (default uniform over the list); normalized to sum 1.
        combine: ``"average"`` (arg max of averaged probabilities) or ``"vote"``
            (weighted majority vote of the members' labels).
        seed: the seed of every member's estimator.
        threads: BLAS / OpenMP threads while fitting and predicting (None: library default).

    Fitted attributes: ``classes_`` (K labels), ``members_`` and ``weights_`` (distinct
    members, summed weights), ``pipelines_``, ``feature_names_in_``, ``n_features_in_``.
    """

    members_: list[tuple[str, dict[str, Any]]]
    pipelines_: list[Any]

    def __init__(
        self,
        members: Sequence[tuple[str, Mapping[str, Any]]] = (),
        weights: Sequence[float] | None = None,
        combine: Combine = "average",
        seed: int = 0,
        threads: int | None = 1,
    ) -> None:
        self.members = members
        self.weights = weights
        self.combine = combine
        self.seed = seed
        self.threads = threads

    # ------------------------------------------------------------------ fitting
    def fit(self, X: Any, y: Any) -> EnsembleModel:
        """Fit every member's pipeline on ``(X, y)``; ``y`` holds class labels."""
        frame = feature_frame(X)
        categorical = isinstance(y, pd.Series) and isinstance(y.dtype, pd.CategoricalDtype)
        labels = y.array if categorical else pd.Categorical(np.asarray(y).ravel())
        if len(labels) != len(frame):
            raise InputDataError(f"X has {len(frame)} rows but y has {len(labels)} labels")
        target = pd.Series(labels, index=frame.index, name="y")
        return self.fit_dataset(Dataset(name="fit", X=frame, y=target, source="array"))

    def fit_dataset(self, dataset: Dataset, rows: Sequence[int] | np.ndarray | None = None, *,
                    reuse: EnsembleModel | None = None) -> EnsembleModel:
        """Fit every member on ``dataset`` (its rows ``rows``, all by default).

        ``reuse``: a model of the same seed already fitted on these rows of ``dataset``
        (the caller vouches for the rows); a member it holds (same algorithm and
        parameters) takes its fitted pipeline instead of a new fit, the one that fit would
        make (the same configuration, seed and rows).

        ``classes_`` are all the dataset's classes, also those absent from ``rows``
        (probability 0), as the caller gave them (:attr:`Dataset.label_values`). Raises :class:`UnknownAlgorithmError` /
        :class:`InvalidConfigurationError` from the factory before fitting anything, and
        :class:`EvaluationError` naming the member whose fit raises.
        """
        if self.combine not in ("average", "vote"):
            raise InputDataError(f"combine must be 'average' or 'vote', got {self.combine!r}")
        dataset.require_clean()
        members, weights = resolve_members(self.members, self.weights)
        codes = class_codes(dataset)
        idx = np.arange(dataset.n_instances) if rows is None else np.asarray(rows, dtype=np.int64)
        X, y = dataset.X.iloc[idx], codes[idx]
        if reuse is not None and reuse.seed != self.seed:
            raise InputDataError(f"a model of seed {reuse.seed} cannot stand in for members of seed {self.seed}")
        fitted = {} if reuse is None else {config_id(a, p): pipe for (a, p), pipe in
                                           zip(reuse.members_, reuse.pipelines_)}
        built = []
        for algorithm, params in members:  # as evaluate(): configuration errors before any fit
            spec, estimator = registry_factory(algorithm, params, self.seed)
            built.append(make_pipeline(spec, dataset, clone(estimator, safe=False)))
        for j, ((algorithm, params), pipeline) in enumerate(zip(members, built)):
            if (key := config_id(algorithm, params)) in fitted:
                built[j] = fitted[key]
                continue
            with threadpool_limits(limits=self.threads), warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                try:
                    pipeline.fit(X, y)
                except Exception as e:
                    raise EvaluationError(
                        f"ensemble member {j} ({algorithm} {params}) failed to fit: {describe(e)}"
                    ) from e
            if caught:
                logger.info("ensemble member %d (%s): %s", j, algorithm, summarize_warnings(caught))
        self.members_, self.weights_, self.pipelines_ = members, weights, built
        self.classes_ = np.asarray([dataset.label(c) for c in class_labels(dataset)])  # as the caller gave them
        self.feature_names_in_ = np.asarray(dataset.X.columns, dtype=object)
        self.n_features_in_ = len(self.feature_names_in_)
        return self

    # ------------------------------------------------------------------ prediction
    def aligned(self, X: Any, *, strict: bool = False) -> pd.DataFrame:
        """``X`` as a feature frame with the fitted columns in the fitted order, each of
        the kind it had at fit (:func:`as_fitted_kinds`); a missing column raises
        :class:`InputDataError` naming it, and so does, with ``strict``, a column the model
        was not fitted on."""
        check_is_fitted(self, "pipelines_")
        frame = feature_frame(X)
        missing = [c for c in self.feature_names_in_ if c not in frame.columns]
        extra = [c for c in frame.columns if c not in set(self.feature_names_in_)] if strict else []
        if missing or extra:
            parts = ([f"lacks the columns {missing[:10]}"] if missing else []) + (
                [f"has columns the model was not fitted on {extra[:10]}"] if extra else [])
            raise InputDataError(f"the data {' and '.join(parts)}; the model was fitted on "
                                 f"{len(self.feature_names_in_)} columns {list(self.feature_names_in_)[:10]}")
        return as_fitted_kinds(frame[list(self.feature_names_in_)], fitted_kinds(self))

    def member_probabilities(self, X: Any) -> np.ndarray:
        """(m, n, K) the members' probabilities on ``X`` (``members_`` order)."""
        frame = self.aligned(X)
        with threadpool_limits(limits=self.threads), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return np.stack([class_probabilities(p, frame, len(self.classes_)) for p in self.pipelines_])

    def codes_of(self, P: np.ndarray) -> np.ndarray:
        """(n,) class indices from the members' probabilities ``P`` (m, n, K), by ``combine``."""
        if self.combine == "vote":
            return majority_vote(P.argmax(axis=2), len(self.classes_), cast(Sequence[float], self.weights_))
        return np.tensordot(self.weights_, P, axes=1).argmax(axis=1)

    def predict_proba(self, X: Any) -> np.ndarray:
        """(n, K) ``sum_j w_j P_j``; column k is ``classes_[k]``."""
        return np.tensordot(self.weights_, self.member_probabilities(X), axes=1)

    def predict_codes(self, X: Any) -> np.ndarray:
        """(n,) predicted class indices into ``classes_`` (by ``combine``)."""
        return self.codes_of(self.member_probabilities(X))

    def predict(self, X: Any) -> np.ndarray:
        """(n,) predicted labels, values of ``classes_``."""
        return self.classes_[self.predict_codes(X)]

    @property
    def configurations(self) -> list[dict[str, Any]]:
        """The distinct members with their summed, normalized weights."""
        if hasattr(self, "members_"):
            members, weights = self.members_, self.weights_
        else:
            members, weights = resolve_members(self.members, self.weights)
        return [{"algorithm": a, "params": dict(p), "weight": float(w)} for (a, p), w in zip(members, weights)]

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike[str], *, trusted: bool = False) -> None:
        """Write the fitted ensemble to ``path`` atomically (a temporary file in the same
        folder, then :func:`os.replace`; a failed write leaves no file behind and the old
        one intact): a skops file, or with a pickle suffix and ``trusted`` a joblib pickle
        (module docstring). :class:`InputDataError` for a path :func:`check_model_path`
        refuses or a model holding a type outside :data:`TRUSTED_TYPES`;
        :class:`OutputFileError` when the write fails (a full disk)."""
        check_is_fitted(self, "pipelines_")
        path = check_model_path(path, trusted=trusted)
        payload = self._payload()
        if is_pickle_path(path):
            def write(f: Any) -> None:
                joblib.dump(payload, f)
        else:
            import skops.io as sio  # here: importing it lists every scikit-learn estimator (seconds)

            data = sio.dumps(payload)
            outside = _untrusted(sio.get_untrusted_types(data=data))
            if outside:  # a file load() would refuse: say so now
                raise InputDataError(
                    f"the model holds {outside[0]}, a type metabo does not load from a skops file; "
                    f"save it as {path.with_suffix('.joblib')} with --trusted (trusted=True)")

            def write(f: Any) -> None:
                f.write(data)
        write_atomic(path, write, what="the model")
        if not is_pickle_path(path):  # a payload built here is checked: predicting from the file reads the copy
            keep_payload(hashlib.sha256(data).hexdigest(), payload)

    def _payload(self) -> dict[str, Any]:
        """What a model file holds."""
        return {
            "format": FORMAT, "version": VERSION, "members": self.members_,
            "weights": self.weights_.tolist(), "combine": self.combine, "seed": self.seed,
            "threads": self.threads, "classes": self.classes_, "pipelines": self.pipelines_,
            "feature_names": self.feature_names_in_.tolist(),
        }

    def keep_checked(self) -> None:
        """Keep the signed local copy of the skops file this model was checked from by
        :meth:`load` with ``keep=False`` (:mod:`metabo.ensembles.model_cache`), once the
        caller's work with it succeeded; nothing otherwise."""
        digest = getattr(self, "_unkept_digest", None)
        if digest is not None:
            keep_payload(digest, self._payload())
            self._unkept_digest: str | None = None

    @classmethod
    def load(cls, path: str | os.PathLike[str], *, trusted: bool = False, keep: bool = True) -> EnsembleModel:
        """The ensemble :meth:`save` wrote to ``path``. A skops file is read trusting only
        :data:`TRUSTED_TYPES` (or from the signed local copy of a file of the same bytes
        this machine wrote or checked); any other file is taken for a pickle and refused
        unless ``trusted`` (unpickling runs the code it holds), before it is read.
        ``keep``: keep a checked file's copy now; with False, :meth:`keep_checked` keeps it
        later (``metabo predict`` does once the predictions are written, so that a failed
        command leaves the home folder as it was). :class:`InputDataError` for a missing,
        corrupt, foreign or refused file."""
        path = Path(path)
        if not path.is_file():
            raise InputDataError(f"no ensemble file at {path}")
        with path.open("rb") as f:
            skops_file = f.read(len(_ZIP_MAGIC)) == _ZIP_MAGIC
        if not skops_file and not trusted:
            raise InputDataError(
                f"{path} is not a skops file: a joblib/pickle model runs code when it is loaded; load it only "
                "if you trust where it came from, with --trusted (trusted=True)")
        unkept = None
        try:
            if skops_file:
                payload, unkept = _load_checked(path)
            else:
                payload = joblib.load(path)
        except InputDataError:
            raise
        except Exception as e:  # any decoding failure means a bad file
            raise InputDataError(f"{path} is not a readable metabo ensemble file: {describe(e)}") from e
        if not isinstance(payload, dict) or payload.get("format") != FORMAT:
            raise InputDataError(f"{path} is not a metabo ensemble file (saved by EnsembleModel.save)")
        if payload.get("version") != VERSION:
            raise InputDataError(f"{path} has ensemble format version {payload.get('version')!r}; "
                                 f"this metabo reads version {VERSION}")
        model = cls(members=payload["members"], weights=payload["weights"], combine=payload["combine"],
                    seed=payload["seed"], threads=payload.get("threads", 1))
        model.members_ = [(a, dict(p)) for a, p in payload["members"]]
        model.weights_ = np.asarray(payload["weights"], dtype=np.float64)
        model.pipelines_ = payload["pipelines"]
        model.classes_ = np.asarray(payload["classes"])
        model.feature_names_in_ = np.asarray(payload["feature_names"], dtype=object)
        model.n_features_in_ = len(model.feature_names_in_)
        model._unkept_digest = unkept
        if keep:
            model.keep_checked()
        return model


def _load_checked(path: Path) -> tuple[Any, str | None]:
    """A skops file's payload, and its SHA-256 when it was checked here and not yet kept:
    the signed local copy kept when this machine last wrote or checked a file of the same
    bytes (:mod:`metabo.ensembles.model_cache`), else loaded by skops trusting only
    :data:`TRUSTED_TYPES` (one audit: a type outside them is refused, named, before
    anything is built)."""
    digest = file_digest(path)
    payload = cached_payload(digest)
    if payload is not None:
        return payload, None
    import skops.io as sio  # here: importing it lists every scikit-learn estimator (seconds)
    from skops.io.exceptions import UntrustedTypesFoundException

    try:
        payload = sio.load(path, trusted=sorted(TRUSTED_TYPES))
    except UntrustedTypesFoundException:
        outside = _untrusted(sio.get_untrusted_types(file=path)) or ["a type outside the allow-list"]
        raise InputDataError(f"{path} holds {outside[0]}, a type metabo does not trust in a model file; "
                             "refused") from None
    return payload, digest


def refit_test_error(
    members: Sequence[tuple[str, Mapping[str, Any]]],
    weights: Sequence[float] | None,
    combine: Combine,
    dataset: Dataset,
    protocol: EvaluationProtocol,
    *,
    seed: int,
    metric: str = "error_rate",
    max_rows: int | None = None,
    reuse: EnsembleModel | None = None,
) -> tuple[EnsembleModel, float]:
    """Fit the ensemble on every row of ``protocol``'s first split that is not test (its
    training and validation rows, thesis sec. 4.4.1, the training rows a ``max_train``
    subsample left out included: the search may subsample, the final model does not) and
    score it with ``metric`` on that split's test rows
    (:class:`~metabo.evaluation.protocols.RefitOnTrainValid` checks there is one). With
    ``max_rows``, on a stratified subsample of at most that many of those rows (seeded:
    :func:`~metabo.evaluation.protocols.stratified_subsample`), for a fit that would not
    end in time on all of them. ``reuse``: a model fitted here before with the same
    ``protocol``, ``seed`` and ``max_rows`` (the selected configuration, say), whose members
    are not fitted again (:meth:`EnsembleModel.fit_dataset`).

    The metric gets the test codes, the ensemble's probabilities and its predicted codes
    (so an error rate counts the majority vote's mistakes under ``combine="vote"``).
    """
    dataset.require_clean()
    fn = get_metric(metric)
    split = RefitOnTrainValid(protocol).splits(dataset, seed)[0]
    assert split.test_idx is not None  # RefitOnTrainValid.splits checks there is one
    rows = np.setdiff1d(np.arange(dataset.n_instances), split.test_idx)
    if max_rows is not None:
        rows = stratified_subsample(rows, class_codes(dataset), max_rows, np.random.default_rng(seed))
    model = EnsembleModel(members, weights, combine, seed).fit_dataset(dataset, rows, reuse=reuse)
    P = model.member_probabilities(dataset.X.iloc[split.test_idx])
    proba = np.tensordot(model.weights_, P, axes=1)
    return model, float(fn(class_codes(dataset)[split.test_idx], proba, model.codes_of(P)))

__all__ = ["TRUSTED_TYPES", "EnsembleModel", "check_model_path", "is_pickle_path", "refit_test_error",
           "resolve_members"]


def fitted_kinds(model: EnsembleModel) -> dict[str, str]:
    """``{column: "numeric" | "nominal"}`` as the model's preprocessing
    (:func:`metabo.evaluation.preprocessing.make_preprocessor`) split its columns at fit;
    empty when its first member's pipeline is not of that shape."""
    kinds: dict[str, str] = {}
    preprocess = getattr(model.pipelines_[0], "named_steps", {}).get("preprocess")
    names = list(model.feature_names_in_)
    for name, _, columns in getattr(preprocess, "transformers_", ()):
        if name in ("numeric", "nominal"):  # columns by position (or by name, in older files)
            kinds.update(dict.fromkeys((str(names[c]) if isinstance(c, (int, np.integer)) else str(c)
                                        for c in columns), name))
    return kinds


def as_fitted_kinds(frame: pd.DataFrame, kinds: dict[str, str]) -> pd.DataFrame:
    """The feature frame ``frame`` with every column of ``kinds`` of the kind it had at fit.

    A file's column is numeric or not by what it holds, so a batch to predict on can read
    otherwise than the table the model was fitted on: a nominal column of numbers
    (declared nominal, as ARFF, OpenML or ``load_file(nominal=...)`` do, or one whose
    fitted values included words) would be matched as "1.0" against the fitted
    category "1", so against no category at all; its numbers become the labels the fit
    gave them. A numeric column read as text is parsed as numbers
    (``?`` and empty are missing); a value that is not one raises
    :class:`InputDataError` naming the column.
    """
    out = frame.copy()
    dtypes = dict(zip(out.columns.tolist(), out.dtypes.tolist()))  # once: a column read per name is slow
    for c, kind in kinds.items():
        if c not in dtypes:
            continue
        numeric = isinstance(dtypes[c], np.dtype) and dtypes[c].kind in "fiu"
        if (kind == "nominal") != numeric:
            continue  # already of its fitted kind
        col = out[c]
        if kind == "nominal" and numeric:
            out[c] = col.map(lambda v: v if pd.isna(v) else num_label(v)).astype("category")
        elif kind == "numeric" and not numeric:
            text = col.astype(object).map(lambda v: v if pd.isna(v) else str(v).strip())
            text = text.where(~text.isin(["?", ""]), np.nan)
            values = pd.to_numeric(text, errors="coerce")
            bad = np.flatnonzero(values.isna().to_numpy() & text.notna().to_numpy())
            if len(bad):
                raise InputDataError(
                    f"column {c!r} held numbers when the model was fitted, but {len(bad)} of its values "
                    f"here are not numbers (row {bad[0] + 1}: {text.iloc[bad[0]]!r}); fix or empty them")
            out[c] = values.astype(np.float64)
    return out
