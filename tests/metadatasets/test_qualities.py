"""OpenML qualities shipped offline (LCDB, OBOE) joined onto stored datasets by OpenML id.

Fixtures: the cut LCDB and OBOE folders of ``tests/fixtures/metadatasets`` (their
READMEs list the lines). LCDB's ``datasets.csv`` there has the lines of OpenML 3
(kr-vs-kp), 6 (letter) and 44 (spambase); OBOE's ``dataset_sizes.csv`` those of 3, 11,
18 and 41005.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import pytest

from metabo.cli.main import main
from metabo.data.files import load_file
from metabo.data.meta_features import compute_meta_features, meta_feature_names
from metabo.data.meta_features.published import (
    OPENML_CONVERTED,
    OPENML_DEFINED,
    from_autosklearn,
    from_openml_qualities,
)
from metabo.exceptions import InputDataError
from metabo.kb import KnowledgeBase
from metabo.kb.queries import nearest_tasks
from metabo.metadatasets.ingest import ingest_metadataset
from metabo.metadatasets.lcdb import LCDB
from metabo.metadatasets.oboe import OBOE
from metabo.metadatasets.qualities import (
    coverage,
    join_qualities,
    lcdb_qualities,
    oboe_qualities,
    read_qualities,
)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "metadatasets"
OPENML_QUALITIES = Path(__file__).parents[1] / "fixtures" / "openml_qualities"


@pytest.fixture
def tables() -> dict:
    return {"lcdb": lcdb_qualities(LCDB(FIXTURES / "lcdb")), "oboe": oboe_qualities(OBOE(FIXTURES / "oboe"))}


def test_names_are_the_projects() -> None:
    names = set(meta_feature_names())
    assert set(OPENML_DEFINED) <= names and set(OPENML_CONVERTED) <= names
    # OpenML has MajorityClassPercentage; LCDB's table lacks it, so it is also converted
    assert set(OPENML_DEFINED) & set(OPENML_CONVERTED) == {"MajorityClassPercentage"}
    assert not any(n.startswith("binned_") for n in OPENML_DEFINED)


def test_lcdb_qualities_of_kr_vs_kp_read_by_hand(tables: dict) -> None:
    t = tables["lcdb"]
    kr = t[t["openml_id"] == 3].set_index("name")["value"]
    # datasets.csv line 2: NumberOfInstances 3196, NumberOfFeatures 37, MajorityClassSize 1669
    assert kr["NumberOfInstances"] == 3196 and kr["NumberOfFeatures"] == 37 and kr["NumberOfClasses"] == 2
    assert kr["ClassEntropy"] == pytest.approx(0.9985755386554582, rel=1e-15)
    assert kr["MajorityClassPercentage"] == pytest.approx(100 * 1669 / 3196)
    assert kr["scot_K"] == 2 and kr["scot_log_d"] == pytest.approx(math.log(36))
    assert kr["scot_log_n_over_d"] == pytest.approx(math.log(3196 / 36))
    assert "AutoCorrelation" not in kr.index and "NumberOfFeaturesAfterBinarization" not in kr.index
    # 36 qualities of the project's names + 4 conversions, less the 10 moments of numeric
    # attributes, which kr-vs-kp (nominal attributes only) does not have
    assert len(kr) == 30
    letter = t[t["openml_id"] == 6].set_index("name")["value"]
    # letter has no nominal attribute: the entropies are empty in the file, so absent here
    assert "MeanAttributeEntropy" not in letter.index and letter["NumberOfSymbolicFeatures"] == 1
    assert set(t["openml_id"]) == {3, 6, 44} and set(t["name"]) <= set(meta_feature_names())


def test_oboe_gives_number_of_instances(tables: dict) -> None:
    t = tables["oboe"].set_index("openml_id")
    assert set(t["name"]) == {"NumberOfInstances"}
    assert t["value"].to_dict() == {3: 3196.0, 11: 625.0, 18: 2000.0, 41005: 3660.0}


def test_conversions_need_their_inputs() -> None:
    assert from_openml_qualities({"NumberOfClasses": 0, "NumberOfFeatures": 1, "Foo": 3}) == {
        "NumberOfClasses": 0.0, "NumberOfFeatures": 1.0}  # regression, no feature column
    assert from_openml_qualities({"NumberOfInstances": float("nan"), "ClassEntropy": ""}) == {}
    # auto-sklearn's letter (feature_values.arff): 16 numeric features, the split's 13400 rows
    asl = from_autosklearn({"NumberOfFeatures": 16, "NumberOfNumericFeatures": 16,
                            "NumberOfCategoricalFeatures": 0, "NumberOfInstances": 13400})
    assert asl == {"NumberOfFeatures": 17.0, "NumberOfNumericFeatures": 16.0, "NumberOfSymbolicFeatures": 1.0,
                   "PercentageOfNumericFeatures": pytest.approx(100 * 16 / 17),
                   "PercentageOfSymbolicFeatures": pytest.approx(100 / 17), "scot_log_d": pytest.approx(math.log(16))}


def test_join_lands_on_every_source_and_keeps_stored_values(tmp_path: Path, tables: dict) -> None:
    kb = KnowledgeBase(tmp_path / "kb.duckdb")
    ingest_metadataset(kb, OBOE(FIXTURES / "oboe"), max_chunks=0)  # datasets only
    kb.register_dataset(name="spambase", source="elsewhere", openml_id=44)
    kb.register_dataset(name="mine", source="elsewhere")  # no OpenML id: untouched
    kb.add_meta_features("openml-3", {"NumberOfInstances": 1.0}, source="metabo")
    report = join_qualities(kb, tables)
    assert report.datasets_with_openml_id == 5 and report.datasets_joined == 5
    mf = kb.query("SELECT dataset_id, name, value, source FROM meta_features")
    kr = mf[mf["dataset_id"] == "openml-3"].set_index("name")
    assert kr.loc["NumberOfInstances", "value"] == 1.0  # a stored value is kept
    assert kr.loc["ClassEntropy", "source"] == "lcdb" and len(kr) == 30
    assert mf[mf["dataset_id"] == "openml-11"].set_index("name")["source"].to_dict() == {
        "NumberOfInstances": "oboe"}
    assert len(mf[mf["dataset_id"] == "openml-44"]) == 36  # LCDB's, whoever registered 44
    assert mf[mf["dataset_id"] == "elsewhere-mine"].empty
    assert report.values_added == 29 + 36 + 3 * 1 and report.by_source == {"lcdb": 65, "oboe": 3}
    again = join_qualities(kb, tables)
    assert again.values_added == 0 and len(kb.query("SELECT * FROM meta_features")) == len(mf)

    hist = coverage(kb, ["oboe"])
    assert hist.to_dict(orient="list") == {"source": ["oboe", "oboe"], "n_meta_features": [30, 1],
                                           "datasets": [1, 3]}
    with pytest.raises(InputDataError, match="ingest them first"):
        coverage(kb, ["pmf"])


def test_joined_task_is_nearest_its_own_data(tmp_path: Path, tables: dict) -> None:
    """The project's meta-features of kr-vs-kp's ARFF (OpenML 3) find the OBOE task
    openml-3, described only by LCDB's qualities, at distance ~0."""
    kb = KnowledgeBase(tmp_path / "kb.duckdb")
    ingest_metadataset(kb, OBOE(FIXTURES / "oboe"), max_chunks=0)
    kb.register_dataset(name="letter", source="lcdb", openml_id=6)
    kb.register_dataset(name="spambase", source="lcdb", openml_id=44)
    join_qualities(kb, tables)
    folder = OPENML_QUALITIES / "3"
    (path,) = folder.glob("api-v1-jd-*.json.gz")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        target = json.load(f)["data_set_description"]["default_target_attribute"]
    (arff,) = folder.glob("*.arff.gz")
    ours = compute_meta_features(load_file(arff, target), landmarkers=False)
    near = nearest_tasks(kb, ours, k=5)
    assert near["dataset_id"].iloc[0] == "openml-3"
    assert near["distance"].iloc[0] == pytest.approx(0.0, abs=1e-6)
    # 30 joined, less NaiveBayesErrRate (not computed here) and the features constant over
    # the stored tasks (no scale): all the rest agree with OpenML's, to float precision
    assert near["n_features_used"].iloc[0] > 20
    # OBOE tasks known by NumberOfInstances only are compared on that one feature
    assert near.set_index("dataset_id").loc["openml-11", "n_features_used"] == 1


def test_read_qualities_refuses_other_sources() -> None:
    from metabo.metadatasets.deeppipe import PMF

    with pytest.raises(InputDataError, match="ships no OpenML qualities"):
        read_qualities(PMF(FIXTURES / "deeppipe"))


def test_cli_joins_and_prints_coverage(capsys, tmp_path: Path) -> None:
    kb = str(tmp_path / "kb.duckdb")
    assert main(["kb", "init", kb]) == 0  # --kb names an existing store
    assert main(["ingest", "oboe", "--kb", kb, "--cache", str(FIXTURES / "oboe"), "--no-fetch",
                 "--max-chunks", "0"]) == 0
    capsys.readouterr()
    assert main(["kb", "join-qualities", "--kb", kb, "--no-fetch", "--lcdb-cache", str(FIXTURES / "lcdb"),
                 "--oboe-cache", str(FIXTURES / "oboe"), "--format", "csv"]) == 0
    out = capsys.readouterr().out
    assert "33 meta-feature values added to 4 of 4 datasets" in out
    assert "oboe,30,1\noboe,1,3\n" in out
