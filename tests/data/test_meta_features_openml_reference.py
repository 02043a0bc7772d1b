"""Meta-features against the qualities OpenML computed for the same data (anneal, id 2).

Only the quantities OpenML's characterizer and ours define the same way are compared;
the file's other values are test-server placeholders (ClassEntropy = -1) or use other
conventions (declared rather than observed classes, fractions for percentages).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from metabo.data.files import load_file
from metabo.data.meta_features import compute_meta_features

FIXTURES = Path(__file__).parent.parent / "fixtures" / "openml"
SAME_DEFINITION = (
    "NumberOfInstances", "NumberOfFeatures", "NumberOfNumericFeatures", "NumberOfMissingValues",
    "NumberOfInstancesWithMissingValues", "Dimensionality", "MajorityClassSize",
    "MeanMeansOfNumericAtts", "MeanStdDevOfNumericAtts",
)


def test_agrees_with_openml_qualities_of_anneal():
    xml = (FIXTURES / "datasets_2_qualities.xml").read_text()
    openml = {k: float(v) for k, v in re.findall(r"<oml:name>(.*?)</oml:name>\s*<oml:value>(.*?)</oml:value>", xml)}
    ds = load_file(FIXTURES / "datasets_2_dataset.arff", "class")
    ours = compute_meta_features(ds, landmarkers=False)
    for name in SAME_DEFINITION:
        assert ours[name] == pytest.approx(openml[name], rel=1e-12), name
    # skewness/kurtosis estimators differ slightly (OpenML's Weka code): within 0.5%
    assert ours["MeanSkewnessOfNumericAtts"] == pytest.approx(openml["MeanSkewnessOfNumericAtts"], rel=5e-3)
    assert ours["MeanKurtosisOfNumericAtts"] == pytest.approx(openml["MeanKurtosisOfNumericAtts"], rel=1e-2)
