"""Meta-features: hand-computed values on tiny datasets, invariances, robustness."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import metabo.data.meta_features.landmarkers as landmarker_module
from metabo.data.dataset import Dataset
from metabo.data.meta_features import GROUPS, compute_meta_features, meta_feature_names
from metabo.data.meta_features.information import discretize
from metabo.exceptions import DataQualityError, InputDataError

CLASS_FEATURES = (
    "MajorityClassSize",
    "MinorityClassSize",
    "MajorityClassPercentage",
    "MinorityClassPercentage",
    "ClassEntropy",
    "MeanMutualInformation",
    "EquivalentNumberOfAtts",
    "MeanNoiseToSignalRatio",
    "binned_MeanMutualInformation",
    "binned_EquivalentNumberOfAtts",
    "binned_MeanNoiseToSignalRatio",
    "scot_K",
    *GROUPS["landmarkers"],
)


# ---------------------------------------------------------------------------- helpers
def make(X: pd.DataFrame, y, *, task="classification", **kwargs) -> Dataset:
    y = pd.Series(y)
    if task == "classification":
        y = y.astype(str).astype("category")
    else:
        y = y.astype(np.float64)
    return Dataset(name="t", X=X, y=y, source="test", task=task, **kwargs)


def g1(x: list[float]) -> float:
    """Bias-corrected skewness by its textbook formula (commons-math, OpenML)."""
    m = len(x)
    mean = sum(x) / m
    s = math.sqrt(sum((v - mean) ** 2 for v in x) / (m - 1))
    return m / ((m - 1) * (m - 2)) * sum(((v - mean) / s) ** 3 for v in x)


def g2(x: list[float]) -> float:
    """Bias-corrected excess kurtosis by its textbook formula."""
    m = len(x)
    mean = sum(x) / m
    s = math.sqrt(sum((v - mean) ** 2 for v in x) / (m - 1))
    quartic = sum(((v - mean) / s) ** 4 for v in x)
    return m * (m + 1) / ((m - 1) * (m - 2) * (m - 3)) * quartic - 3 * (m - 1) ** 2 / (
        (m - 2) * (m - 3)
    )


def same(a: dict[str, float], b: dict[str, float], tol: float = 1e-12) -> list[str]:
    """Names whose values differ (NaN equals NaN)."""
    assert list(a) == list(b)
    return [
        k
        for k in a
        if not (
            (math.isnan(a[k]) and math.isnan(b[k]))
            or abs(a[k] - b[k]) <= tol * max(1.0, abs(a[k]))
        )
    ]


def mixed_dataset(n: int = 300, seed: int = 0) -> Dataset:
    """Numeric and nominal columns, missing values in both, a constant column, 3 classes."""
    rng = np.random.default_rng(seed)
    x1 = rng.standard_normal(n)
    x2 = rng.exponential(size=n)
    x3 = rng.standard_normal(n)
    noise = rng.standard_normal(n)
    score = x1 + 0.5 * x2 + noise
    y = np.where(score < -0.3, "a", np.where(score < 1.0, "b", "c"))
    nom = rng.choice(["u", "v", "w"], size=n).astype(object)
    nom2 = np.where(x3 > 0, "pos", "neg").astype(object)
    x1[rng.random(n) < 0.1] = np.nan
    nom[rng.random(n) < 0.1] = np.nan
    X = pd.DataFrame(
        {
            "x1": x1,
            "x2": x2,
            "x3": x3,
            "const": np.full(n, 7.0),
            "nom": pd.Categorical(nom),
            "nom2": pd.Categorical(nom2),
        }
    )
    return make(X, y)


# ---------------------------------------------------------------------------- hand values
A = [1.0, 1.0, 2.0, 3.0, 10.0]  # column "a" without its missing value


@pytest.fixture
def tiny() -> Dataset:
    """6 rows, 2 classes (4 'n', 2 'p'); c predicts the class perfectly."""
    X = pd.DataFrame(
        {
            "a": [*A, np.nan],
            "b": [5.0] * 6,
            "c": pd.Categorical(["x", "x", "x", "x", "y", "y"]),
        }
    )
    return make(X, ["n", "n", "n", "n", "p", "p"])


def test_counts_follow_openml(tiny: Dataset) -> None:
    mf = compute_meta_features(tiny, landmarkers=False)
    assert mf["NumberOfInstances"] == 6
    assert mf["NumberOfFeatures"] == 4  # 3 features + the target, as OpenML counts
    assert mf["NumberOfClasses"] == 2
    assert mf["NumberOfNumericFeatures"] == 2
    assert mf["NumberOfSymbolicFeatures"] == 2  # c and the nominal target
    assert mf["NumberOfBinaryFeatures"] == 2
    assert mf["NumberOfMissingValues"] == 1
    assert mf["NumberOfInstancesWithMissingValues"] == 1
    assert mf["PercentageOfMissingValues"] == pytest.approx(100 / 24)
    assert mf["PercentageOfInstancesWithMissingValues"] == pytest.approx(100 / 6)
    assert mf["PercentageOfNumericFeatures"] == pytest.approx(50.0)
    assert mf["PercentageOfSymbolicFeatures"] == pytest.approx(50.0)
    assert mf["Dimensionality"] == pytest.approx(4 / 6)
    assert mf["MajorityClassSize"] == 4
    assert mf["MinorityClassSize"] == 2
    assert mf["MajorityClassPercentage"] == pytest.approx(100 * 4 / 6)
    assert mf["MinorityClassPercentage"] == pytest.approx(100 * 2 / 6)
    assert mf["MeanNominalAttDistinctValues"] == 2  # c and the target
    assert mf["MaxNominalAttDistinctValues"] == 2
    assert mf["MinNominalAttDistinctValues"] == 2


def test_class_entropy_in_bits(tiny: Dataset) -> None:
    mf = compute_meta_features(tiny, groups=["information"])
    expected = -(4 / 6 * math.log2(4 / 6) + 2 / 6 * math.log2(2 / 6))
    assert mf["ClassEntropy"] == pytest.approx(expected, abs=1e-14)
    assert expected == pytest.approx(0.9182958340544896)


def test_moments_match_hand_formulas(tiny: Dataset) -> None:
    mf = compute_meta_features(tiny, groups=["statistical"])
    mean_a = sum(A) / len(A)
    std_a = math.sqrt(sum((v - mean_a) ** 2 for v in A) / (len(A) - 1))
    # b is constant: mean 5, std 0, skewness 0 and kurtosis 0 (commons-math convention)
    assert mf["MeanMeansOfNumericAtts"] == pytest.approx((mean_a + 5.0) / 2)
    assert mf["MeanStdDevOfNumericAtts"] == pytest.approx(std_a / 2)
    assert mf["MeanSkewnessOfNumericAtts"] == pytest.approx(g1(A) / 2, abs=1e-12)
    assert mf["MaxSkewnessOfNumericAtts"] == pytest.approx(g1(A), abs=1e-12)
    assert mf["MinSkewnessOfNumericAtts"] == 0.0
    assert mf["Quartile2SkewnessOfNumericAtts"] == pytest.approx(g1(A) / 2, abs=1e-12)
    assert mf["MeanKurtosisOfNumericAtts"] == pytest.approx(g2(A) / 2, abs=1e-12)
    assert mf["MaxKurtosisOfNumericAtts"] == pytest.approx(g2(A), abs=1e-12)


def test_openml_xor_moments() -> None:
    """OpenML's own test: the XOR column 0, 0, 1, 1 has std 0.577..., G1 0 and G2 -6."""
    X = pd.DataFrame({"x": [0.0, 0.0, 1.0, 1.0]})
    mf = compute_meta_features(make(X, ["a", "b", "b", "a"]), groups=["statistical"])
    assert mf["MeanStdDevOfNumericAtts"] == pytest.approx(0.5773502691896257)
    assert mf["MeanSkewnessOfNumericAtts"] == pytest.approx(0.0, abs=1e-12)
    assert mf["MeanKurtosisOfNumericAtts"] == pytest.approx(-6.0)


def test_perfectly_predictive_attribute_carries_the_class_entropy() -> None:
    X = pd.DataFrame({"c": pd.Categorical(["x", "x", "x", "y", "y", "z"])})
    mf = compute_meta_features(make(X, ["n", "n", "n", "p", "p", "q"]), groups=["information"])
    assert mf["MeanMutualInformation"] == pytest.approx(mf["ClassEntropy"], abs=1e-12)
    assert mf["MeanAttributeEntropy"] == pytest.approx(mf["ClassEntropy"], abs=1e-12)
    assert mf["EquivalentNumberOfAtts"] == pytest.approx(1.0)
    assert mf["MeanNoiseToSignalRatio"] == pytest.approx(0.0, abs=1e-12)


def test_independent_attribute_has_zero_information() -> None:
    X = pd.DataFrame({"c": pd.Categorical(["x", "y", "x", "y"])})
    mf = compute_meta_features(make(X, ["n", "n", "p", "p"]), groups=["information"])
    assert mf["MeanMutualInformation"] == 0.0
    assert math.isnan(mf["EquivalentNumberOfAtts"])
    assert math.isnan(mf["MeanNoiseToSignalRatio"])


def test_binned_variant_uses_numeric_attributes_in_ten_equal_width_bins() -> None:
    codes = discretize(np.array([0.0, 5.0, 10.0, np.nan, 0.99, 1.0, 1.01]))
    # cut points 1, 2, ..., 9; a value on a cut point goes to the lower bin (Weka)
    assert codes.tolist() == [0, 4, 9, -1, 0, 0, 1]
    X = pd.DataFrame({"x": np.arange(10, dtype=np.float64)})
    mf = compute_meta_features(make(X, ["a"] * 5 + ["b"] * 5), groups=["information"])
    assert mf["binned_MeanAttributeEntropy"] == pytest.approx(math.log2(10))
    assert mf["binned_MeanMutualInformation"] == pytest.approx(1.0)  # x determines the class
    # OpenML's definition uses nominal attributes only: there is none
    assert math.isnan(mf["MeanAttributeEntropy"]) and math.isnan(mf["MeanMutualInformation"])
    assert mf["ClassEntropy"] == pytest.approx(1.0)


def test_openml_entropy_counts_a_missing_value_as_the_first_declared_one() -> None:
    """OpenML's characterizer indexes its counts with (int) NaN = 0."""
    c = pd.Categorical(["x", None, "y", "y"], categories=["x", "y"])
    mf = compute_meta_features(make(pd.DataFrame({"c": c}), ["n", "n", "p", "p"]),
                               groups=["information"])
    assert mf["MeanAttributeEntropy"] == pytest.approx(1.0)  # x, x, y, y
    assert mf["MeanMutualInformation"] == pytest.approx(1.0)  # determines the class
    # the binned variant leaves the missing value out: x, y, y
    assert mf["binned_MeanAttributeEntropy"] == pytest.approx(-(1 / 3) * math.log2(1 / 3) - (2 / 3) * math.log2(2 / 3))


def test_pca_of_a_line_needs_one_component() -> None:
    rng = np.random.default_rng(3)
    t = rng.exponential(size=50)
    X = pd.DataFrame({f"x{j}": (j + 1) * t - 3.0 * j for j in range(4)})
    X["x2"] = -X["x2"]  # a negative loading must not change anything
    mf = compute_meta_features(make(X, rng.choice(["a", "b"], 50)), groups=["scot"])
    assert mf["scot_pca_rho95"] == pytest.approx(1 / 4)
    assert mf["scot_K"] == 2
    assert mf["scot_log_d"] == pytest.approx(math.log(4))
    assert mf["scot_log_n_over_d"] == pytest.approx(math.log(50 / 4))
    assert mf["scot_pc1_skewness"] == pytest.approx(abs(g1(list(t))), rel=1e-9)
    assert mf["scot_pc1_kurtosis"] == pytest.approx(g2(list(t)), rel=1e-9)


def test_pca_of_independent_columns_needs_most_components() -> None:
    rng = np.random.default_rng(4)
    X = pd.DataFrame(rng.standard_normal((500, 5)), columns=list("abcde"))
    mf = compute_meta_features(make(X, rng.choice(["a", "b"], 500)), groups=["scot"])
    assert mf["scot_pca_rho95"] == 1.0


def test_separable_data_gives_zero_landmarker_errors() -> None:
    x = np.r_[np.linspace(0.0, 0.4, 30), np.linspace(0.6, 1.0, 30)]
    X = pd.DataFrame({"x": x, "x2": x**2})
    mf = compute_meta_features(make(X, np.where(x < 0.5, "a", "b")), groups=["landmarkers"])
    assert mf["DecisionStumpErrRate"] == 0.0
    assert mf["kNN1NErrRate"] == 0.0
    assert mf["LinearDiscriminantAnalysisErrRate"] == 0.0
    assert 0.0 <= mf["NaiveBayesErrRate"] <= 0.1


# ---------------------------------------------------------------------------- invariances
def test_row_order_invariance_including_landmarkers() -> None:
    ds = mixed_dataset()
    perm = np.random.default_rng(11).permutation(ds.n_instances)
    shuffled = make(ds.X.iloc[perm].reset_index(drop=True), ds.y.iloc[perm].to_numpy())
    a, b = compute_meta_features(ds), compute_meta_features(shuffled)
    assert same(a, b) == []
    assert all(np.isfinite(a[k]) for k in GROUPS["landmarkers"])


def test_row_order_invariance_with_subsampling(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(landmarker_module, "MAX_ROWS", 120)
    ds = mixed_dataset(n=400)
    perm = np.random.default_rng(12).permutation(ds.n_instances)
    shuffled = make(ds.X.iloc[perm].reset_index(drop=True), ds.y.iloc[perm].to_numpy())
    a = compute_meta_features(ds, groups=["landmarkers"], seed=5)
    b = compute_meta_features(shuffled, groups=["landmarkers"], seed=5)
    assert same(a, b) == []


def test_column_order_invariance() -> None:
    ds = mixed_dataset()
    cols = list(ds.X.columns)[::-1]
    permuted = make(ds.X[cols], ds.y.to_numpy())
    assert same(compute_meta_features(ds), compute_meta_features(permuted)) == []


def test_same_seed_same_values_other_seed_other_folds() -> None:
    ds = mixed_dataset()
    a = compute_meta_features(ds, seed=1)
    assert same(a, compute_meta_features(ds, seed=1), tol=0.0) == []
    b = compute_meta_features(ds, seed=2)
    non_landmarkers = [k for k in a if k not in GROUPS["landmarkers"]]
    assert same({k: a[k] for k in non_landmarkers}, {k: b[k] for k in non_landmarkers}) == []
    assert any(a[k] != b[k] for k in GROUPS["landmarkers"])


def test_generator_seed_is_accepted() -> None:
    ds = mixed_dataset(n=80)
    a = compute_meta_features(ds, seed=np.random.default_rng(3), groups=["landmarkers"])
    b = compute_meta_features(ds, seed=np.random.default_rng(3), groups=["landmarkers"])
    assert same(a, b, tol=0.0) == []


# ---------------------------------------------------------------------------- robustness
def test_regression_has_nan_class_features() -> None:
    rng = np.random.default_rng(5)
    X = pd.DataFrame({"x": rng.standard_normal(40), "c": pd.Categorical(rng.choice(["u", "v"], 40))})
    y = 3.0 * X["x"].to_numpy() + rng.standard_normal(40)
    mf = compute_meta_features(make(X, y, task="regression"))
    for name in CLASS_FEATURES:
        assert math.isnan(mf[name]), name
    assert mf["NumberOfClasses"] == 0  # OpenML's value for a numeric target
    assert mf["NumberOfNumericFeatures"] == 2  # x and the numeric target
    assert mf["NumberOfSymbolicFeatures"] == 1
    assert math.isnan(mf["MeanAttributeEntropy"])  # OpenML: null for a numeric target
    assert np.isfinite(mf["binned_MeanAttributeEntropy"])
    assert np.isfinite(mf["MeanSkewnessOfNumericAtts"])
    assert np.isfinite(mf["scot_pca_rho95"])


def test_only_nominal_columns() -> None:
    rng = np.random.default_rng(6)
    n = 120
    a = rng.choice(["p", "q", "r"], n).astype(object)
    b = rng.choice(["s", "t"], n).astype(object)
    a[:7] = np.nan
    y = np.where((a == "p") | (b == "s"), "yes", "no")
    X = pd.DataFrame({"a": pd.Categorical(a), "b": pd.Categorical(b)})
    mf = compute_meta_features(make(X, y))
    for name in GROUPS["statistical"]:
        assert math.isnan(mf[name]), name
    assert mf["NumberOfNumericFeatures"] == 0
    assert mf["NumberOfSymbolicFeatures"] == 3
    assert mf["NumberOfMissingValues"] == 7
    for name in (*GROUPS["information"], *GROUPS["scot"], *GROUPS["landmarkers"]):
        assert np.isfinite(mf[name]), name


def test_awkward_columns_give_no_warning_and_no_inf() -> None:
    n = 50
    rng = np.random.default_rng(7)
    X = pd.DataFrame(
        {
            "const": np.full(n, 1e10),
            "nearly_const": 1e10 + np.arange(n) * 1e-6,
            "all_missing": np.full(n, np.nan),
            "two_values": np.r_[np.full(n - 2, np.nan), [1.0, 2.0]],
            "x": rng.standard_normal(n),
            "nom_missing": pd.Categorical([np.nan] * n, categories=["a"]),
            "nom_const": pd.Categorical(["k"] * n),
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mf = compute_meta_features(make(X, rng.choice(["a", "b"], n)))
    assert not any(np.isinf(v) for v in mf.values())
    assert mf["MinSkewnessOfNumericAtts"] <= mf["MaxSkewnessOfNumericAtts"]
    assert all(np.isfinite(mf[k]) for k in GROUPS["landmarkers"])


def test_no_feature_columns() -> None:
    X = pd.DataFrame(index=range(10))
    mf = compute_meta_features(make(X, ["a", "b"] * 5))
    assert mf["NumberOfFeatures"] == 1
    assert math.isnan(mf["scot_log_d"])
    assert all(math.isnan(mf[k]) for k in GROUPS["landmarkers"])


def test_single_member_class_still_gives_landmarkers() -> None:
    ds = mixed_dataset(n=60)
    y = ds.y.astype(str).to_numpy()
    y[0] = "lonely"
    mf = compute_meta_features(make(ds.X, y), groups=["landmarkers"])
    assert all(np.isfinite(mf[k]) for k in GROUPS["landmarkers"])


# ---------------------------------------------------------------------------- interface
def test_names_types_and_groups() -> None:
    ds = mixed_dataset(n=60)
    mf = compute_meta_features(ds)
    assert list(mf) == meta_feature_names()
    assert all(type(v) is float for v in mf.values())
    assert len(set(mf)) == len(mf)
    no_lm = compute_meta_features(ds, landmarkers=False)
    assert list(no_lm) == meta_feature_names(landmarkers=False)
    assert not set(no_lm) & set(GROUPS["landmarkers"])
    only = compute_meta_features(ds, groups=["scot", "simple"])
    assert list(only) == [*GROUPS["simple"], *GROUPS["scot"]]
    with pytest.raises(InputDataError, match="unknown meta-feature groups"):
        compute_meta_features(ds, groups=["nope"])


def test_flagged_dataset_is_refused(tiny: Dataset) -> None:
    flagged = make(tiny.X, tiny.y.to_numpy(), flags={"lost_decimals": ("a",)})
    with pytest.raises(DataQualityError):
        compute_meta_features(flagged)
