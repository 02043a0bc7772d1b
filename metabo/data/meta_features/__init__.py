"""Meta-features: numbers that describe a dataset, for finding similar past tasks.

Notation
--------
n        rows (instances)
d        feature columns; d_num numeric, d_nom nominal (pandas Categorical), d_str
         free text (``Dataset.string_columns``: ARFF STRING attributes, Categorical
         columns not counted in d_nom), which OpenML counts as features that are
         neither numeric nor symbolic
t        the target, which OpenML counts as one more attribute: numeric for
         regression, nominal for classification; so OpenML's "features" are d + 1
K        observed classes; n_c rows of class c; p(c) = n_c / n
m        missing cells of X, free-text columns included (the target has none)
H, I     entropy and mutual information in bits (log base 2)
G1, G2   bias-corrected sample skewness and excess kurtosis (scipy ``bias=False``)
Z, Zs    the n x D encoding (median-imputed numeric, one-hot nominal) and its
         standardized copy

Groups and features
-------------------
Names are OpenML quality names where OpenML has the same quantity, computed as OpenML's
characterizers (openml/EvaluationEngine, ``fantail.dc``) do; differences are listed
under "Deviations from OpenML".

``simple`` (module ``simple``):
  NumberOfInstances = n; NumberOfFeatures = d + 1 (target included, as OpenML);
  NumberOfClasses = K (0 for regression, as OpenML);
  NumberOfNumericFeatures = d_num + [regression];
  NumberOfSymbolicFeatures = d_nom + [classification];
  NumberOfBinaryFeatures = nominal attributes (target included) with exactly 2
  declared categories; NumberOfMissingValues = m;
  NumberOfInstancesWithMissingValues = rows with at least one missing cell;
  PercentageOfMissingValues = 100 m / (n (d + 1));
  PercentageOfInstancesWithMissingValues = 100 * that count / n;
  PercentageOf{Numeric,Symbolic,Binary}Features = 100 * count / (d + 1);
  Dimensionality = (d + 1) / n;
  MajorityClassSize = max_c n_c; MinorityClassSize = min_c n_c (observed classes);
  Majority/MinorityClassPercentage = 100 * size / n;
  {Mean,Max,Min}NominalAttDistinctValues over nominal attributes, target included, of
  the number of distinct non-missing values.
``statistical`` (module ``statistical``), over the numeric attributes (a numeric target
  included, as OpenML), missing values left out:
  MeanMeansOfNumericAtts = mean of column means; MeanStdDevOfNumericAtts = mean of
  sample standard deviations; {Mean,Min,Max,Quartile2}SkewnessOfNumericAtts of G1;
  {Mean,Min,Max,Quartile2}KurtosisOfNumericAtts of G2. A constant column has G1 = G2 =
  0; no numeric attribute -> NaN.
``information`` (module ``information``), over the nominal attributes A, a missing
  value counting as the first declared one (OpenML's definition):
  ClassEntropy = H(Y); MeanAttributeEntropy = mean_A H(A);
  MeanMutualInformation = mean_A I(A; Y);
  EquivalentNumberOfAtts = ClassEntropy / MeanMutualInformation;
  MeanNoiseToSignalRatio = (MeanAttributeEntropy - MeanMutualInformation)
  / MeanMutualInformation; and binned_MeanAttributeEntropy, binned_MeanMutualInformation,
  binned_EquivalentNumberOfAtts, binned_MeanNoiseToSignalRatio, the same over the
  nominal and the numeric attributes (in 10 equal-width bins), missing values left out.
``scot`` (module ``scot``; Bardenet et al. 2013): scot_K = K, scot_log_d = ln d,
  scot_log_n_over_d = ln(n / d), scot_pca_rho95 = d' / D (d' components for 95% of
  the variance of Zs), scot_pc1_skewness = |G1| and scot_pc1_kurtosis = G2 of Zs
  projected on its first principal direction.
``landmarkers`` (module ``landmarkers``): DecisionStumpErrRate, NaiveBayesErrRate,
  kNN1NErrRate, LinearDiscriminantAnalysisErrRate: stratified 2-fold CV error (OpenML's
  protocol) on at most 5,000 rows drawn with the seed; Weka's naive Bayes and 1-NN on
  the attributes, an entropy stump on Z, LDA on Zs.

Class-based values (class balance, ClassEntropy, mutual information, scot_K,
landmarkers) are NaN for regression. A value is NaN only where it is undefined.

Determinism
-----------
Everything is computed on a canonical copy of the data (columns sorted by name, rows
sorted by a content hash; ``_prepare``), so values do not depend on the row or the column
order of the input, the landmarkers included. Only the landmarkers use the seed (the
5,000-row subsample and the fold assignment): the same seed gives the same values.

Deviations from OpenML
----------------------
- Landmarkers: the folds are drawn by scikit-learn from the seed (OpenML: Weka's
  ``crossValidateModel`` with ``Random(1)``), so values differ by the partition noise
  of a 2-fold CV estimate; at most 5,000 rows; the stump is scikit-learn's (missing
  values median-imputed, where Weka's ``DecisionStump`` gives them a branch of their
  own). Weka's landmarkers refuse free-text attributes; here they are left out.
- Free-text columns are left out of the encodings Z and Zs (PCA, stump, LDA).
- AutoCorrelation (which depends on the row order) and the Quartile1/3, Min/Max
  aggregates of means and standard deviations are not computed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Literal

from metabo._typing import Seed
from metabo.data.dataset import Dataset
from metabo.data.meta_features import information, scot, simple, statistical
from metabo.data.meta_features import landmarkers as _landmarkers
from metabo.data.meta_features._prepare import encode, prepare, standardize
from metabo.exceptions import InputDataError

#: Feature names of each group, in the order :func:`compute_meta_features` returns them.
GROUPS: dict[str, tuple[str, ...]] = {
    "simple": simple.NAMES,
    "statistical": statistical.NAMES,
    "information": information.NAMES,
    "scot": scot.NAMES,
    "landmarkers": _landmarkers.NAMES,
}

__all__ = ["GROUPS", "compute_meta_features", "meta_feature_names"]


def _selected_groups(groups: Iterable[str] | None, landmarkers_on: bool) -> list[str]:
    if groups is None:
        chosen = list(GROUPS)
    else:
        requested = [groups] if isinstance(groups, str) else list(groups)
        unknown = sorted(set(requested) - set(GROUPS))
        if unknown:
            raise InputDataError(
                f"unknown meta-feature groups {unknown}; choose among {list(GROUPS)}"
            )
        chosen = [g for g in GROUPS if g in set(requested)]
    if not landmarkers_on:
        chosen = [g for g in chosen if g != "landmarkers"]
    return chosen


def meta_feature_names(
    *, landmarkers: bool = True, groups: Iterable[str] | None = None
) -> list[str]:
    """The names :func:`compute_meta_features` returns for these arguments, in order."""
    return [name for g in _selected_groups(groups, landmarkers) for name in GROUPS[g]]


def compute_meta_features(
    dataset: Dataset,
    *,
    seed: Seed = 0,
    landmarkers: bool = True,
    groups: Iterable[str] | None = None,
    flagged: Literal["refuse", "exclude"] = "refuse",
) -> dict[str, float]:
    """Meta-features of ``dataset`` as name -> value (see the module docstring).

    Args:
        dataset: a clean dataset; a flagged one (lost decimals, say) is refused with
            :class:`~metabo.exceptions.DataQualityError`, as for training, unless
            ``flagged="exclude"``.
        flagged: ``"exclude"`` describes a flagged dataset honestly instead: the
            ``simple`` group and the SCoT counts (K, log d, log n/d) (counts, kinds,
            missingness, class sizes: nothing that depends on the numeric values) are
            computed on every column, and the value-dependent quantities on the
            unflagged columns only (all NaN-free
            quantities of a dataset whose every column is flagged are then NaN).
        seed: drives the landmarkers' subsample and folds, nothing else is random
            (``None``: fresh randomness, so landmarkers vary between calls).
        landmarkers: ``False`` skips the landmarkers, the only part that trains models.
        groups: names from :data:`GROUPS` to compute; ``None`` for all of them.

    Returns:
        A dict with the names of :func:`meta_feature_names`, in that order; every value
        a float, NaN where the quantity is undefined for this dataset.
    """
    chosen = _selected_groups(groups, landmarkers)
    if flagged not in ("refuse", "exclude"):
        raise InputDataError(f"flagged must be 'refuse' or 'exclude', not {flagged!r}")
    out: dict[str, float] = {}
    counts: dict[str, float] = {}
    if flagged == "exclude" and dataset.flags:
        bad = sorted({c for cols in dataset.flags.values() for c in cols})
        # Counts do not depend on the corrupted values: all columns, flags lifted.
        full = prepare(replace(dataset, flags={}))
        if "simple" in chosen:
            out.update(simple.simple_features(full))
        if "scot" in chosen:
            counts = scot.scot_count_features(full)
        dataset = replace(
            dataset, X=dataset.X.drop(columns=bad), flags={},
            string_columns=tuple(c for c in dataset.string_columns if c not in set(bad)),
        )
        chosen_values = [g for g in chosen if g != "simple"]
    else:
        dataset.require_clean()
        chosen_values = chosen
    prep = prepare(dataset)
    if "simple" in chosen_values:
        out.update(simple.simple_features(prep))
    if "statistical" in chosen_values:
        out.update(statistical.statistical_features(prep))
    if "information" in chosen_values:
        out.update(information.information_features(prep))
    if "scot" in chosen_values or "landmarkers" in chosen_values:
        Z = encode(prep)
        Zs = standardize(Z)
        if "scot" in chosen_values:
            out.update(scot.scot_features(prep, Zs))
            out.update(counts)
        if "landmarkers" in chosen_values:
            out.update(_landmarkers.landmarker_features(prep, Z, Zs, seed=seed))
    return {name: float(out[name]) for g in chosen for name in GROUPS[g]}
