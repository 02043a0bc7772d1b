"""Counts, class balance and nominal cardinalities, as OpenML's ``SimpleMetaFeatures``
and ``NominalAttDistinctValues`` characterizers compute them.

Notation: n rows; d feature columns, d_num numeric and d_nom nominal (a free-text
column, an ARFF STRING attribute, counts in d and for its missing values only, as in
OpenML); t = 1 for the target, which OpenML counts as an attribute (numeric for
regression, nominal for classification); m missing cells; n_c rows of class c, K
observed classes.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from metabo.data.meta_features._prepare import Prepared

NAMES: tuple[str, ...] = (
    "NumberOfInstances",
    "NumberOfFeatures",
    "NumberOfClasses",
    "NumberOfNumericFeatures",
    "NumberOfSymbolicFeatures",
    "NumberOfBinaryFeatures",
    "NumberOfMissingValues",
    "NumberOfInstancesWithMissingValues",
    "PercentageOfMissingValues",
    "PercentageOfInstancesWithMissingValues",
    "PercentageOfNumericFeatures",
    "PercentageOfSymbolicFeatures",
    "PercentageOfBinaryFeatures",
    "Dimensionality",
    "MajorityClassSize",
    "MinorityClassSize",
    "MajorityClassPercentage",
    "MinorityClassPercentage",
    "MeanNominalAttDistinctValues",
    "MaxNominalAttDistinctValues",
    "MinNominalAttDistinctValues",
)


def simple_features(prep: Prepared) -> dict[str, float]:
    """OpenML's simple features of ``prep`` (:data:`NAMES`): counts of rows, attributes by kind,
    classes, missing values, and their ratios."""
    X, y = prep.X, prep.y
    n, d = prep.n, prep.d
    clf = prep.is_classification
    n_attributes = d + 1  # OpenML: numAttributes() counts the target
    n_numeric = len(prep.numeric) + (0 if clf else 1)
    n_symbolic = len(prep.nominal) + (1 if clf else 0)
    # OpenML: nominal attributes with exactly two *declared* values, the target included.
    n_binary = sum(len(X[c].cat.categories) == 2 for c in prep.nominal)
    if clf and len(y.cat.categories) == 2:
        n_binary += 1
    missing = X.isna().to_numpy() if d else np.zeros((n, 0), dtype=bool)
    n_missing = int(missing.sum())  # the target never has missing values (Dataset)
    n_rows_missing = int(missing.any(axis=1).sum())

    out: dict[str, float] = {
        "NumberOfInstances": float(n),
        "NumberOfFeatures": float(n_attributes),
        "NumberOfNumericFeatures": float(n_numeric),
        "NumberOfSymbolicFeatures": float(n_symbolic),
        "NumberOfBinaryFeatures": float(n_binary),
        "NumberOfMissingValues": float(n_missing),
        "NumberOfInstancesWithMissingValues": float(n_rows_missing),
        "PercentageOfMissingValues": 100.0 * n_missing / (n * n_attributes),
        "PercentageOfInstancesWithMissingValues": 100.0 * n_rows_missing / n,
        "PercentageOfNumericFeatures": 100.0 * n_numeric / n_attributes,
        "PercentageOfSymbolicFeatures": 100.0 * n_symbolic / n_attributes,
        "PercentageOfBinaryFeatures": 100.0 * n_binary / n_attributes,
        "Dimensionality": n_attributes / n,
    }
    out.update(_class_balance(y, n) if clf else _no_classes())
    out.update(_nominal_cardinality(prep))
    return {name: out[name] for name in NAMES}


def _class_balance(y: pd.Series, n: int) -> dict[str, float]:
    counts = y.value_counts(sort=False).to_numpy()
    counts = counts[counts > 0]  # observed classes, as OpenML counts them
    return {
        "NumberOfClasses": float(len(counts)),
        "MajorityClassSize": float(counts.max()),
        "MinorityClassSize": float(counts.min()),
        "MajorityClassPercentage": 100.0 * counts.max() / n,
        "MinorityClassPercentage": 100.0 * counts.min() / n,
    }


def _no_classes() -> dict[str, float]:
    # OpenML reports NumberOfClasses = 0 for a numeric target and null for the rest.
    nan = float("nan")
    return {
        "NumberOfClasses": 0.0,
        "MajorityClassSize": nan,
        "MinorityClassSize": nan,
        "MajorityClassPercentage": nan,
        "MinorityClassPercentage": nan,
    }


def _nominal_cardinality(prep: Prepared) -> dict[str, float]:
    # Distinct observed (non-missing) values of every nominal attribute, target included.
    distinct = [prep.X[c].nunique(dropna=True) for c in prep.nominal]
    if prep.is_classification:
        distinct.append(prep.y.nunique(dropna=True))
    if not distinct:
        nan = float("nan")
        return {
            "MeanNominalAttDistinctValues": nan,
            "MaxNominalAttDistinctValues": nan,
            "MinNominalAttDistinctValues": nan,
        }
    values = np.asarray(distinct, dtype=np.float64)
    return {
        "MeanNominalAttDistinctValues": float(values.mean()),
        "MaxNominalAttDistinctValues": float(values.max()),
        "MinNominalAttDistinctValues": float(values.min()),
    }
