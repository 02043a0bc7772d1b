"""Entropies and mutual information: OpenML's ``AttributeEntropy`` characterizer, and a
variant that also uses the numeric attributes.

Notation: Y the class, A one attribute, p(.) empirical frequencies over the n rows, H
entropy in bits (log base 2), I(A; Y) = H(A) + H(Y) - H(A, Y) the mutual information in
bits (OpenML computes it as the information gain H(Y) - sum_a p(a) H(Y | A = a), the same
number).

OpenML's definition (openml/EvaluationEngine, ``fantail.dc.statistical.AttributeEntropy``
and ``DCUntils``), under OpenML's names:

- attributes: the nominal ones only (not free-text ones, not the target); a missing value
  counts as the attribute's first declared value (Weka stores it as NaN, and the
  characterizer indexes its counts with ``(int) value``, which is 0);
- ClassEntropy = H(Y) = -sum_c p(c) log2 p(c);
- MeanAttributeEntropy = mean over attributes of H(A);
- MeanMutualInformation = mean over attributes of I(A; Y), each rounded to 14 decimals
  as OpenML does (so that an independent attribute gives exactly 0);
- EquivalentNumberOfAtts = ClassEntropy / MeanMutualInformation;
- MeanNoiseToSignalRatio = (MeanAttributeEntropy - MeanMutualInformation)
  / MeanMutualInformation.

The last two are NaN when MeanMutualInformation is not positive; the means are NaN
without a nominal attribute (OpenML: null); every value is NaN for regression (OpenML:
null).

The ``binned_`` variant (the project's own, not comparable with OpenML's values): the
same four means over every nominal attribute as it is and every numeric attribute
discretized into B = 10 equal-width bins over [min, max] of its finite values (Weka's
unsupervised ``Discretize`` default; a value equal to a cut point goes to the lower bin;
a constant attribute is one bin), missing values left out (H(A) and I(A; Y) over the rows
where A is present). For regression, binned_MeanAttributeEntropy, which does not involve
the target, is still given.
"""

from __future__ import annotations

import numpy as np
from scipy import stats
from sklearn.metrics import mutual_info_score

from metabo.data.meta_features._prepare import Prepared

N_BINS = 10

_MEANS: tuple[str, ...] = (
    "MeanAttributeEntropy",
    "MeanMutualInformation",
    "EquivalentNumberOfAtts",
    "MeanNoiseToSignalRatio",
)
NAMES: tuple[str, ...] = ("ClassEntropy", *_MEANS, *(f"binned_{name}" for name in _MEANS))


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


def openml_codes(prep: Prepared) -> list[np.ndarray]:
    """Codes of the nominal attributes as OpenML counts them: a missing value is code 0,
    the first declared value."""
    return [np.maximum(prep.X[c].cat.codes.to_numpy(np.int64), 0) for c in prep.nominal]


def binned_codes(prep: Prepared) -> list[np.ndarray]:
    """Integer codes (-1 = missing) of every attribute: nominal ones, then binned numeric."""
    codes = [prep.X[c].cat.codes.to_numpy(np.int64) for c in prep.nominal]
    codes += [discretize(prep.X[c].to_numpy(np.float64)) for c in prep.numeric]
    return codes


def information_features(prep: Prepared) -> dict[str, float]:
    """The entropy and mutual-information features (:data:`NAMES`, module docstring): the class
    entropy, OpenML's attribute means and their ``binned_`` variants; NaN where a numeric target
    leaves them undefined."""
    y = prep.class_codes() if prep.is_classification else None
    class_entropy = entropy_bits(y) if y is not None else float("nan")
    out = {"ClassEntropy": class_entropy}
    openml = _means(openml_codes(prep), y, class_entropy)
    binned = _means(binned_codes(prep), y, class_entropy)
    if y is None:  # OpenML gives null for a numeric target
        openml["MeanAttributeEntropy"] = float("nan")
    out.update(openml)
    out.update({f"binned_{name}": value for name, value in binned.items()})
    return {name: out[name] for name in NAMES}


def _means(codes: list[np.ndarray], y: np.ndarray | None, class_entropy: float) -> dict[str, float]:
    """The four means of :data:`_MEANS` over attributes given by codes (-1 = missing, left
    out); the class-based ones NaN when ``y`` is None (regression)."""
    nan = float("nan")
    entropies: list[float] = []
    informations: list[float] = []
    for a in codes:
        present = a >= 0
        if not present.any():
            continue
        a_p = a[present]
        entropies.append(entropy_bits(a_p))
        if y is not None:
            mi_nats = mutual_info_score(None, None, contingency=_contingency(y[present], a_p))
            informations.append(round(mi_nats / np.log(2.0), 14))
    mean_entropy = float(np.mean(entropies)) if entropies else nan
    mean_mi = float(np.mean(informations)) if informations else nan
    if mean_mi > 0:
        ena = class_entropy / mean_mi
        nsr = (mean_entropy - mean_mi) / mean_mi
    else:
        ena = nsr = nan
    return {
        "MeanAttributeEntropy": mean_entropy,
        "MeanMutualInformation": mean_mi,
        "EquivalentNumberOfAtts": ena,
        "MeanNoiseToSignalRatio": nsr,
    }
