"""The preprocessing in front of every estimator, chosen by its algorithm's needs.

A :class:`~sklearn.compose.ColumnTransformer` over the dataset's columns (by name):

- numeric columns: median imputation (skipped when the algorithm handles missing
  values itself, e.g. LightGBM), then standardization when it needs scaling (kNN,
  SVMs, MLP, ...);
- nominal columns: values as strings with a missing value as its own category
  (``"__missing__"``: missingness can carry information, and it needs no choice of a
  most frequent value), then one-hot encoding or ordinal encoding (an unseen category is
  -1), by the algorithm's ``encoding``; ``native`` is the ordinal encoding, the estimator told
  which output columns hold the codes (:func:`tell_nominal`), for learners with their own
  categorical splits (CatBoost, XGBoost). One-hot keeps a column for each of a feature's
  :data:`MAX_ONE_HOT_LEVELS` - 1 most frequent training categories and one shared column for
  the rest (scikit-learn's ``max_categories``, the idea of auto-sklearn's minority
  coalescer), where an unseen category goes too (all zeros when no category is that rare):
  an identifier-like column of thousands of levels (students, products) would otherwise
  make the dense matrix thousands of columns wide, gigabytes on a table of 70,000 rows.

Then the estimator. The whole pipeline is fitted on the training rows only, so nothing
(medians, scales, categories) is learned from validation or test rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol

import numpy as np
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.impute import SimpleImputer
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder, OrdinalEncoder, StandardScaler

from metabo.data.dataset import Dataset
from metabo.exceptions import InputDataError

MISSING = "__missing__"
#: At most this many one-hot columns per nominal feature (module docstring): more than any
#: nominal feature of the shipped knowledge base has levels (26), so its runs are unchanged.
MAX_ONE_HOT_LEVELS = 64
#: the encodings of nominal columns an algorithm may ask for (module docstring)
ENCODINGS = ("onehot", "ordinal", "native")


class PreprocessingNeeds(Protocol):
    """What preprocessing reads of an algorithm (an ``AlgorithmSpec`` has these; read-only:
    the specs are frozen dataclasses)."""

    @property
    def needs_scaling(self) -> bool:
        """Whether the numeric columns are standardized for the algorithm."""
        ...

    @property
    def encoding(self) -> str:
        """How nominal columns are encoded: ``"onehot"``, ``"ordinal"`` or ``"native"``."""
        ...

    @property
    def handles_missing(self) -> bool:
        """Whether the algorithm takes missing values itself (else they are imputed)."""
        ...


@dataclass(frozen=True)
class PreprocessingSpec:
    """A stand-alone :class:`PreprocessingNeeds`, for estimators outside the registry."""

    needs_scaling: bool = False
    encoding: Literal["onehot", "ordinal", "native"] = "onehot"
    handles_missing: bool = False


def nominal_as_strings(X: pd.DataFrame | np.ndarray) -> np.ndarray:
    """Nominal values as ``str`` (so 1 and "1" agree), a missing value as :data:`MISSING`."""
    values = pd.DataFrame(X).astype(object)
    missing = values.isna().to_numpy()
    out = values.to_numpy().astype(str).astype(object)  # str() of each value, all columns at once
    out[missing] = MISSING
    return out


def encoder_kind(spec: PreprocessingNeeds) -> Literal["onehot", "ordinal"]:
    """The columns ``spec``'s encoding makes of the nominal features: ``native`` is the
    ordinal codes (the estimator is told where they are, :func:`tell_nominal`)."""
    if spec.encoding not in ENCODINGS:
        raise InputDataError(f"unknown encoding {spec.encoding!r}; use one of {', '.join(ENCODINGS)}")
    return "onehot" if spec.encoding == "onehot" else "ordinal"


def make_preprocessor(spec: PreprocessingNeeds, dataset: Dataset) -> ColumnTransformer:
    """The column transformer for ``dataset``'s columns and ``spec``'s needs."""
    kind = encoder_kind(spec)
    # columns by position (ColumnTransformer looks names up one by one in the list of all
    # names, quadratic in the width), held as integer arrays (a model file then stores each
    # list as one array, not one entry per column)
    numeric = [i for i, k in enumerate(dataset.feature_kinds) if k == "numeric"]
    nominal = [i for i, k in enumerate(dataset.feature_kinds) if k == "nominal"]
    transformers: list[tuple[str, Any, np.ndarray]] = []
    if numeric:
        steps: list[tuple[str, Any]] = []
        if not spec.handles_missing:
            steps.append(("impute", SimpleImputer(strategy="median", keep_empty_features=True)))
        if spec.needs_scaling:
            steps.append(("scale", StandardScaler()))
        transformers.append(("numeric", Pipeline(steps) if steps else "passthrough",
                             np.asarray(numeric, dtype=np.intp)))
    if nominal:
        if kind == "onehot":
            encoder: Any = OneHotEncoder(handle_unknown="infrequent_if_exist", sparse_output=False,
                                         max_categories=MAX_ONE_HOT_LEVELS)
        else:
            encoder = OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1)
        strings = FunctionTransformer(nominal_as_strings, feature_names_out="one-to-one")
        transformers.append(("nominal", Pipeline([("as_strings", strings), ("encode", encoder)]),
                             np.asarray(nominal, dtype=np.intp)))
    if not transformers:
        raise InputDataError(f"dataset {dataset.name!r} has no feature columns")
    return ColumnTransformer(transformers, remainder="drop", sparse_threshold=0.0)


def nominal_positions(dataset: Dataset) -> tuple[int, ...]:
    """The columns of :func:`make_preprocessor`'s output that hold the nominal columns'
    ordinal codes: after the numeric ones, in the dataset's order."""
    kinds = list(dataset.feature_kinds)
    numeric = sum(k == "numeric" for k in kinds)
    return tuple(range(numeric, numeric + sum(k == "nominal" for k in kinds)))


def tell_nominal(spec: PreprocessingNeeds, dataset: Dataset, estimator: Any) -> Any:
    """``estimator``, told the positions of the nominal codes (:func:`nominal_positions`,
    its ``categorical`` parameter) when ``spec`` asks for the ``native`` encoding."""
    if spec.encoding == "native":
        estimator.set_params(categorical=nominal_positions(dataset))
    return estimator


def make_pipeline(spec: PreprocessingNeeds, dataset: Dataset, estimator: Any) -> Pipeline:
    """``preprocess -> model``: :func:`make_preprocessor` followed by ``estimator``
    (:func:`tell_nominal`)."""
    return Pipeline([("preprocess", make_preprocessor(spec, dataset)), ("model", tell_nominal(spec, dataset,
                                                                                              estimator))])
