"""Datasets with meta-features into the knowledge base; flagged datasets stay flagged."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from metabo.data.dataset import Dataset
from metabo.data.meta_features import compute_meta_features
from metabo.exceptions import DataQualityError, InputDataError
from metabo.ingest.datasets import ingest_dataset, ingest_datasets
from metabo.kb import KnowledgeBase


def _dataset(flags=None) -> Dataset:
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"good": rng.normal(size=60), "bad": rng.integers(10, 9999, 60).astype(float),
                          "t": rng.choice(["a", "b"], 60)})
    return Dataset.from_frame(frame, "t", name="toy", source="test", flags=flags or {})


def test_flagged_dataset_excludes_flagged_columns_from_value_features():
    flagged = _dataset({"lost_decimals": ("bad",)})
    with pytest.raises(DataQualityError):
        compute_meta_features(flagged)
    got = compute_meta_features(flagged, flagged="exclude", landmarkers=False)
    clean_subset = Dataset.from_frame(flagged.X[["good"]].assign(t=flagged.y), "t", name="toy", source="test")
    expected_values = compute_meta_features(clean_subset, landmarkers=False)
    full = compute_meta_features(_dataset(), groups=["simple", "scot"])
    expected_counts = {k: v for k, v in full.items() if not k.startswith("scot_") or k in
                       ("scot_K", "scot_log_d", "scot_log_n_over_d")}
    for name, value in got.items():
        reference = expected_counts[name] if name in expected_counts else expected_values[name]
        assert value == pytest.approx(reference, nan_ok=True), name
    assert got["NumberOfFeatures"] == 3  # both features + the target, as OpenML counts


def test_ingest_stores_flags_and_meta_features(tmp_path):
    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        ds_id = ingest_dataset(kb, _dataset({"lost_decimals": ("bad",)}), landmarkers=False)
        row = kb.get_dataset(ds_id)
        assert row["flags"] == {"lost_decimals": ["bad"]}
        n = kb.query("SELECT count(*) FROM meta_features WHERE dataset_id = ?", [ds_id]).iloc[0, 0]
        assert n > 30


def test_ingest_datasets_is_resumable_and_reports_failures(tmp_path):
    calls = []

    def load(spec: str) -> Dataset:
        calls.append(spec)
        if spec == "broken":
            raise InputDataError("cannot read broken")
        return _dataset()

    with KnowledgeBase(tmp_path / "kb.duckdb") as kb:
        first = ingest_datasets(kb, ["toy", "broken"], load=load, landmarkers=False)
        assert first.stored == ("test-toy",) and first.failed[0][0] == "broken"
        second = ingest_datasets(kb, ["toy"], load=load, landmarkers=False)
        assert second.skipped == ("toy",) and second.stored == ()
        assert kb.stats()["datasets"] == 1
