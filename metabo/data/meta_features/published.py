"""The project's meta-features from values that published collections ship.

Notation: the project's names and definitions are those of :mod:`metabo.data.meta_features`
(n rows, d feature columns, the target counted by OpenML as one more attribute, K
observed classes). A published value is used under a project name only where its
definition is the project's, exactly or by an exact conversion; every other value is
kept out of the project's names.

OpenML qualities (:func:`from_openml_qualities`). The project's OpenML-named features are
computed as OpenML's characterizers compute them (checked against OpenML's qualities of
six datasets in ``tests/data/test_meta_features_openml_reference.py``), so an OpenML
quality of such a name is that feature, taken as it is:

- the ``simple``, ``statistical`` and OpenML ``information`` features (not the
  ``binned_`` ones) and the landmarkers ``DecisionStumpErrRate``, ``NaiveBayesErrRate``,
  ``kNN1NErrRate`` (deviation: OpenML's folds come from Weka's ``Random(1)``, the
  project's from its seed, so the two differ by the partition noise of a 2-fold CV
  estimate, as the project's own values of two seeds do);
- converted exactly: ``MajorityClassPercentage = 100 MajorityClassSize /
  NumberOfInstances`` (where a table, as LCDB's, has the minority's percentage only),
  ``scot_K = NumberOfClasses`` (NaN when 0, i.e. regression),
  ``scot_log_d = ln d`` and ``scot_log_n_over_d = ln(n / d)`` with
  ``d = NumberOfFeatures - 1`` (OpenML counts the target; NaN when d = 0).

Left out: OpenML qualities the project does not compute (``AutoCorrelation``, the
``Quartile1/3`` and ``Min``/``Max`` aggregates of means, standard deviations, entropies
and mutual information, ``NaiveBayesAUC``, ``NaiveBayesKappa``, LCDB's
``NumberOfFeaturesAfterBinarization``), and the project's own features no collection
ships (``binned_*``, ``scot_pca_rho95``, ``scot_pc1_*``, ``LinearDiscriminantAnalysisErrRate``).

auto-sklearn's meta-features (:func:`from_autosklearn`; ``autosklearn/metalearning/
metafeatures/metafeatures.py`` of auto-sklearn 0.15.0, whose metadata computed them on a
67% training split of each dataset, classification only). Only the counts of columns and
their kinds do not depend on the split, and they convert exactly:

- ``NumberOfFeatures = X.shape[1] + 1`` (auto-sklearn leaves the target out);
- ``NumberOfNumericFeatures``: the features typed ``numerical`` (the classification
  target is nominal, so OpenML counts none more);
- ``NumberOfSymbolicFeatures = NumberOfCategoricalFeatures + 1`` (the target);
- ``PercentageOfNumericFeatures``, ``PercentageOfSymbolicFeatures`` = 100 count /
  ``NumberOfFeatures`` as above; ``scot_log_d = LogNumberOfFeatures`` (ln d, the same d).

Mismatches, left out: ``NumberOfInstances`` (and every count of rows or missing cells,
``LogNumberOfInstances``, ``DatasetRatio``) is the training split's (letter: 13,400 of
OpenML's 20,000); ``PercentageOf*MissingValues`` are fractions of the split's cells
without the target; ``NumberOfClasses``, ``ClassEntropy`` and ``ClassProbability*`` are
the split's, not the dataset's; ``Symbols*`` count a nominal feature's values in the split
and leave the target out (OpenML's ``*NominalAttDistinctValues`` count it);
``Skewness*``/``Kurtosis*`` are scipy's biased estimates (OpenML's are bias-corrected).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from metabo.data.meta_features import GROUPS

__all__ = [
    "AUTOSKLEARN_CONVERTED",
    "OPENML_CONVERTED",
    "OPENML_DEFINED",
    "from_autosklearn",
    "from_openml_qualities",
]

#: Project features that are OpenML qualities of the same name and definition.
OPENML_DEFINED: tuple[str, ...] = (
    *GROUPS["simple"],
    *GROUPS["statistical"],
    *(n for n in GROUPS["information"] if not n.startswith("binned_")),
    *(n for n in GROUPS["landmarkers"] if n != "LinearDiscriminantAnalysisErrRate"),
)
#: Project features converted exactly from other OpenML qualities.
OPENML_CONVERTED: tuple[str, ...] = ("MajorityClassPercentage", "scot_K", "scot_log_d", "scot_log_n_over_d")
#: Project features converted exactly from auto-sklearn's meta-features.
AUTOSKLEARN_CONVERTED: tuple[str, ...] = (
    "NumberOfFeatures", "NumberOfNumericFeatures", "NumberOfSymbolicFeatures",
    "PercentageOfNumericFeatures", "PercentageOfSymbolicFeatures", "scot_log_d",
)


def _finite(value: object) -> float | None:
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def from_openml_qualities(qualities: Mapping[str, object]) -> dict[str, float]:
    """The project's meta-features given by OpenML qualities (see the module docstring).

    Only defined values are returned: a missing, empty or non-finite quality gives no
    entry (so another source may supply it), and a conversion needs all its inputs.
    """
    q = {name: x for name, value in qualities.items() if (x := _finite(value)) is not None}
    out = {name: q[name] for name in OPENML_DEFINED if name in q}
    n, features = q.get("NumberOfInstances"), q.get("NumberOfFeatures")
    majority, classes = q.get("MajorityClassSize"), q.get("NumberOfClasses")
    if "MajorityClassPercentage" not in out and majority is not None and n:
        out["MajorityClassPercentage"] = 100.0 * majority / n
    if classes is not None and classes > 0:
        out["scot_K"] = classes
    if features is not None and features > 1:
        d = features - 1.0  # OpenML's NumberOfFeatures counts the target
        out["scot_log_d"] = math.log(d)
        if n:
            out["scot_log_n_over_d"] = math.log(n / d)
    return out


def from_autosklearn(values: Mapping[str, object]) -> dict[str, float]:
    """The project's meta-features given by auto-sklearn's of one classification dataset
    (only the split-invariant column counts; see the module docstring)."""
    v = {name: x for name, value in values.items() if (x := _finite(value)) is not None}
    out: dict[str, float] = {}
    d, numeric, nominal = v.get("NumberOfFeatures"), v.get("NumberOfNumericFeatures"), v.get(
        "NumberOfCategoricalFeatures")
    if d is None:
        return out
    attributes = d + 1.0
    out["NumberOfFeatures"] = attributes
    if numeric is not None:
        out["NumberOfNumericFeatures"] = numeric
        out["PercentageOfNumericFeatures"] = 100.0 * numeric / attributes
    if nominal is not None:
        out["NumberOfSymbolicFeatures"] = nominal + 1.0
        out["PercentageOfSymbolicFeatures"] = 100.0 * (nominal + 1.0) / attributes
    if d > 0:
        out["scot_log_d"] = math.log(d)
    return out
