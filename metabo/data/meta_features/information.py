"""Entropies and mutual information, after OpenML's ``AttributeEntropy`` characterizer.

Notation: Y the class, A one attribute, p(.) empirical frequencies, H entropy in bits
(log base 2), I(A; Y) = H(A) + H(Y) - H(A, Y) the mutual information in bits.

Attributes. Every nominal attribute as it is, and every numeric attribute discretized
into B = 10 equal-width bins over [min, max] of its finite values (Weka's unsupervised
``Discretize`` default; a value equal to a cut point goes to the lower bin; a constant
attribute is one bin). OpenML's current characterizer uses the nominal attributes only,
so for data with numeric attributes the values here differ from OpenML's. Missing values
are left out: H(A) over the rows where A is present, I(A; Y) over the same rows.

- ClassEntropy = H(Y) = -sum_c p(c) log2 p(c), over all n rows;
- MeanAttributeEntropy = mean over attributes of H(A);
- MeanMutualInformation = mean over attributes of I(A; Y), each rounded to 14 decimals
  as OpenML does (so that an independent attribute gives exactly 0);
- EquivalentNumberOfAtts = ClassEntropy / MeanMutualInformation;
- MeanNoiseToSignalRatio = (MeanAttributeEntropy - MeanMutualInformation)
  / MeanMutualInformation.

The last two are NaN when MeanMutualInformation is 0. For regression every class-based
value is NaN; MeanAttributeEntropy, which does not involve the target, is still given
(OpenML gives null).
"""

from __future__ import annotations

import numpy as np
from scipy import stats
from sklearn.metrics import mutual_info_score

from metabo.data.meta_features._prepare import Prepared

N_BINS = 10

NAMES: tuple[str, ...] = (
    "ClassEntropy",
    "MeanAttributeEntropy",
    "MeanMutualInformation",
    "EquivalentNumberOfAtts",
    "MeanNoiseToSignalRatio",
)


def discretize(x: np.ndarray, n_bins: int = N_BINS) -> np.ndarray:
    """Equal-width bin index 0..n_bins-1 of each value; -1 for a missing/infinite one."""
    codes = np.full(x.shape, -1, dtype=np.int64)
    ok = np.isfinite(x)
    if not ok.any():
        return codes
    values = x[ok]
    lo, hi = values.min(), values.max()
    if hi == lo:
        codes[ok] = 0
        return codes
    cuts = lo + (hi - lo) * np.arange(1, n_bins) / n_bins
    codes[ok] = np.searchsorted(cuts, values, side="left")  # x <= cut_j -> bin j
    return codes


def entropy_bits(codes: np.ndarray) -> float:
    """H in bits of non-negative integer codes."""
    return float(stats.entropy(np.bincount(codes), base=2))


def _contingency(y: np.ndarray, a: np.ndarray) -> np.ndarray:
    """K x L table of counts of (class, attribute code) pairs (codes >= 0)."""
    n_levels = int(a.max()) + 1
    n_classes = int(y.max()) + 1
    flat = np.bincount(y * n_levels + a, minlength=n_classes * n_levels)
    return flat.reshape(n_classes, n_levels)


def attribute_codes(prep: Prepared) -> list[np.ndarray]:
    """Integer codes (-1 = missing) of every attribute: nominal ones, then binned numeric."""
    codes = [prep.X[c].cat.codes.to_numpy(np.int64) for c in prep.nominal]
    codes += [discretize(prep.X[c].to_numpy(np.float64)) for c in prep.numeric]
    return codes


def information_features(prep: Prepared) -> dict[str, float]:
    nan = float("nan")
    y = prep.class_codes() if prep.is_classification else None
    entropies: list[float] = []
    informations: list[float] = []
    for a in attribute_codes(prep):
        present = a >= 0
        if not present.any():
            continue
        a_p = a[present]
        entropies.append(entropy_bits(a_p))
        if y is not None:
            mi_nats = mutual_info_score(None, None, contingency=_contingency(y[present], a_p))
            informations.append(round(mi_nats / np.log(2.0), 14))
    mean_entropy = float(np.mean(entropies)) if entropies else nan
    if y is None:
        return {
            "ClassEntropy": nan,
            "MeanAttributeEntropy": mean_entropy,
            "MeanMutualInformation": nan,
            "EquivalentNumberOfAtts": nan,
            "MeanNoiseToSignalRatio": nan,
        }
    class_entropy = entropy_bits(y)
    mean_mi = float(np.mean(informations)) if informations else nan
    if mean_mi > 0:
        ena = class_entropy / mean_mi
        nsr = (mean_entropy - mean_mi) / mean_mi
    else:
        ena = nsr = nan
    return {
        "ClassEntropy": class_entropy,
        "MeanAttributeEntropy": mean_entropy,
        "MeanMutualInformation": mean_mi,
        "EquivalentNumberOfAtts": ena,
        "MeanNoiseToSignalRatio": nsr,
    }
