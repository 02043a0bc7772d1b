"""Loading CSV, Parquet and ARFF files: round trips and clear errors."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from metabo.data.files import load_file, read_table
from metabo.exceptions import InputDataError


@pytest.fixture
def frame() -> pd.DataFrame:
    return pd.DataFrame({
        "x": [0.5, -1.25, np.nan, 3.0, 2.75, 1e-3],
        "n": [1, 2, 3, 4, 5, 6],
        "color": ["red", "blue", None, "red", "green", "blue"],
        "label": ["a", "b", "a", "b", "a", "b"],
    })


def check(ds, frame: pd.DataFrame, *, source: str = "file") -> None:
    assert ds.source == source and ds.task == "classification"
    assert list(ds.X.columns) == ["x", "n", "color"]
    assert ds.feature_kinds == ("numeric", "numeric", "nominal")
    np.testing.assert_array_equal(ds.X["x"].to_numpy(), frame["x"].to_numpy())
    np.testing.assert_array_equal(ds.X["n"].to_numpy(), frame["n"].to_numpy(dtype=float))
    assert ds.X["color"].astype(object).where(ds.X["color"].notna(), None).tolist() == [
        "red", "blue", None, "red", "green", "blue"
    ]
    assert ds.y.astype(str).tolist() == frame["label"].tolist()


def test_csv_round_trip(tmp_path: Path, frame: pd.DataFrame) -> None:
    path = tmp_path / "toy.csv"
    frame.to_csv(path, index=False)
    ds = load_file(path, "label")
    check(ds, frame)
    assert ds.name == "toy"


def test_compressed_csv_and_question_mark_missing(tmp_path: Path, frame: pd.DataFrame) -> None:
    path = tmp_path / "toy.csv.gz"
    frame.assign(x=frame["x"].astype(object).where(frame["x"].notna(), "?")).to_csv(
        path, index=False
    )
    ds = load_file(path, "label")
    check(ds, frame)
    assert ds.name == "toy"


def test_parquet_round_trip(tmp_path: Path, frame: pd.DataFrame) -> None:
    path = tmp_path / "toy.parquet"
    frame.to_parquet(path, index=False)
    check(load_file(path, "label", name="named"), frame)
    assert load_file(path, "label", name="named").name == "named"


def test_parquet_categorical_and_nominal_override(tmp_path: Path, frame: pd.DataFrame) -> None:
    frame = frame.assign(color=frame["color"].astype("category"))
    path = tmp_path / "toy.pq"
    frame.to_parquet(path, index=False)
    ds = load_file(path, "label", nominal=["n"])
    assert ds.feature_kinds == ("numeric", "nominal", "nominal")
    assert ds.X["n"].astype(str).tolist() == ["1", "2", "3", "4", "5", "6"]


ARFF = """% a comment
@RELATION toy

@ATTRIBUTE x NUMERIC
@ATTRIBUTE n INTEGER
@ATTRIBUTE color {red, blue, green}
@ATTRIBUTE label {a, b}

@DATA
0.5, 1, red, a
-1.25, 2, blue, b
?, 3, ?, a
3.0, 4, red, b
2.75, 5, green, a
0.001, 6, blue, b
"""


def test_arff_round_trip_nominal_attributes(tmp_path: Path, frame: pd.DataFrame) -> None:
    path = tmp_path / "toy.arff"
    path.write_text(ARFF)
    ds = load_file(path, "label")
    check(ds, frame)
    assert set(ds.X["color"].cat.categories) == {"red", "blue", "green"}


def test_arff_numeric_looking_nominal_stays_nominal(tmp_path: Path) -> None:
    path = tmp_path / "codes.arff"
    path.write_text(
        "@RELATION r\n@ATTRIBUTE code {1, 2, 3}\n@ATTRIBUTE y {0, 1}\n@DATA\n1,0\n3,1\n2,0\n"
    )
    ds = load_file(path, "y")
    assert ds.feature_kinds == ("nominal",)
    assert ds.y.astype(str).tolist() == ["0", "1", "0"]


def test_fmt_overrides_the_extension(tmp_path: Path, frame: pd.DataFrame) -> None:
    path = tmp_path / "toy.data"
    frame.to_csv(path, index=False)
    check(load_file(path, "label", fmt="csv"), frame)


# ------------------------------------------------------------------------------ errors
def test_missing_target_column(tmp_path: Path, frame: pd.DataFrame) -> None:
    path = tmp_path / "toy.csv"
    frame.to_csv(path, index=False)
    with pytest.raises(InputDataError, match="no target column 'class'"):
        load_file(path, "class")


def test_missing_file_and_unknown_extension(tmp_path: Path) -> None:
    with pytest.raises(InputDataError, match="no such file"):
        load_file(tmp_path / "absent.csv", "y")
    (tmp_path / "toy.xlsx").write_text("x")
    with pytest.raises(InputDataError, match="extension"):
        load_file(tmp_path / "toy.xlsx", "y")
    with pytest.raises(InputDataError, match="unknown file format"):
        load_file(tmp_path / "toy.xlsx", "y", fmt="excel")  # type: ignore[arg-type]


def test_corrupt_parquet(tmp_path: Path) -> None:
    path = tmp_path / "bad.parquet"
    path.write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(InputDataError, match="cannot read Parquet") as info:
        load_file(path, "y")
    assert info.value.__cause__ is not None


def test_truncated_parquet(tmp_path: Path, frame: pd.DataFrame) -> None:
    good = tmp_path / "good.parquet"
    frame.to_parquet(good)
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(good.read_bytes()[: len(good.read_bytes()) // 2])
    with pytest.raises(InputDataError, match="cannot read Parquet"):
        load_file(bad, "label")


def test_corrupt_arff(tmp_path: Path) -> None:
    path = tmp_path / "bad.arff"
    path.write_text("@RELATION r\n@ATTRIBUTE x NUMERIC\n@ATTRIBUTE y {a, b}\n@DATA\n1, c\n")
    with pytest.raises(InputDataError, match="cannot read ARFF") as info:
        load_file(path, "y")
    assert info.value.__cause__ is not None
    path.write_text("this is not arff at all\n")
    with pytest.raises(InputDataError, match="cannot read ARFF"):
        load_file(path, "y")


def test_corrupt_csv(tmp_path: Path) -> None:
    ragged = tmp_path / "ragged.csv"
    ragged.write_text("a,b,y\n1,2,x\n1,2,3,4,5\n")
    with pytest.raises(InputDataError, match="cannot read CSV") as info:
        load_file(ragged, "y")
    assert info.value.__cause__ is not None
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"\xff\xfe\x00\x81garbage\x00\x9f")
    with pytest.raises(InputDataError):
        load_file(binary, "y")
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    with pytest.raises(InputDataError, match="cannot read CSV"):
        load_file(empty, "y")


def test_header_only_csv_has_no_rows(tmp_path: Path) -> None:
    path = tmp_path / "header.csv"
    path.write_text("x,y\n")
    with pytest.raises(InputDataError, match="no rows"):
        load_file(path, "y")


# ------------------------------------------------------------------ OpenML's ARFF files
def test_question_mark_in_a_nominal_declaration_is_the_missing_marker(tmp_path: Path) -> None:
    """OpenML's penguins (42585) declares ``sex {?,FEMALE,MALE,_}``."""
    path = tmp_path / "penguins.arff"
    path.write_text(
        "@RELATION p\n@ATTRIBUTE sex {?,FEMALE,MALE,_}\n@ATTRIBUTE y {a,b}\n"
        "@DATA\nFEMALE,a\n?,b\n_,a\nMALE,b\n"
    )
    ds = load_file(path, "y")
    assert list(ds.X["sex"].cat.categories) == ["FEMALE", "MALE", "_"]
    assert ds.X["sex"].isna().tolist() == [False, True, False, False]


def test_arff_string_attributes_are_listed_as_string_columns(tmp_path: Path) -> None:
    path = tmp_path / "titanic.arff.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write(
            "@RELATION t\n@ATTRIBUTE name STRING\n@ATTRIBUTE age NUMERIC\n"
            "@ATTRIBUTE sex {female,male}\n@ATTRIBUTE cabin STRING\n@ATTRIBUTE y {0,1}\n"
            "@DATA\n'Allen, Miss',29,female,B5,1\n'Brown, Mr',?,male,?,0\n"
        )
    ds = load_file(path, "y")
    assert ds.name == "titanic"
    assert ds.string_columns == ("name", "cabin")
    assert ds.feature_kinds == ("nominal", "numeric", "nominal", "nominal")
    assert ds.X["name"].astype(str).tolist() == ["Allen, Miss", "Brown, Mr"]
    assert ds.X["cabin"].isna().tolist() == [False, True]


def test_ignore_drops_named_columns(tmp_path: Path, frame: pd.DataFrame) -> None:
    path = tmp_path / "toy.csv"
    frame.assign(animal=[f"a{i}" for i in range(6)]).to_csv(path, index=False)
    ds = load_file(path, "label", ignore=["animal"])
    check(ds, frame)
    assert "animal" in ds.description
    with pytest.raises(InputDataError, match=r"cannot ignore \['nope'\]"):
        load_file(path, "label", ignore=["nope"])
    with pytest.raises(InputDataError, match="target column 'label' cannot be ignored"):
        load_file(path, "label", ignore=["label"])


def test_ignored_string_column_is_not_listed(tmp_path: Path) -> None:
    path = tmp_path / "t.arff"
    path.write_text(
        "@RELATION t\n@ATTRIBUTE id STRING\n@ATTRIBUTE x NUMERIC\n@ATTRIBUTE y {a,b}\n"
        "@DATA\nr1,1,a\nr2,2,b\n"
    )
    ds = load_file(path, "y", ignore=["id"])
    assert list(ds.X.columns) == ["x"] and ds.string_columns == ()


@pytest.mark.parametrize("text, sep, decimal", [
    ("a,b,y\n1.5,2,p\n", ",", "."),
    ("a;b;y\n1,5;2;p\n", ";", ","),
    ("a;b;y\n1.5;2;p\n", ";", "."),
    ("a\tb\ty\n1.5\t2\tp\n", "\t", "."),
    ("a|b|y\n1.5|2|p\n", "|", "."),
    ("y\np\n", ",", "."),
])
def test_the_csv_dialect_is_read_from_the_header(text, sep, decimal):
    from metabo.data.files import csv_dialect

    assert csv_dialect(text) == (sep, decimal)


def test_a_semicolon_csv_with_decimal_commas_loads_as_a_comma_csv(tmp_path):
    frame = pd.DataFrame({"a": [1.5, 2.25, 3.0, 4.5], "b": [1, 2, 3, 4], "y": ["p", "q", "p", "q"]})
    frame.to_csv(comma := tmp_path / "comma.csv", index=False)
    frame.to_csv(semi := tmp_path / "semi.csv", index=False, sep=";", decimal=",")
    assert "1,5" in semi.read_text()
    a, b = load_file(comma, "y"), load_file(semi, "y")
    pd.testing.assert_frame_equal(a.X, b.X)
    assert list(a.y) == list(b.y)


def test_a_gzipped_semicolon_csv_is_detected_too(tmp_path):
    frame = pd.DataFrame({"a": [1.5, 2.25, 3.0, 4.5], "y": ["p", "q", "p", "q"]})
    frame.to_csv(path := tmp_path / "semi.csv.gz", index=False, sep=";", decimal=",")
    assert list(load_file(path, "y").X["a"]) == [1.5, 2.25, 3.0, 4.5]


def test_a_header_naming_a_column_twice_is_read_with_a_warning(tmp_path: Path, caplog) -> None:
    path = tmp_path / "dup.csv"
    path.write_text("a,a,b,a,y\n1,2,3,4,0\n5,6,7,8,1\n")
    with caplog.at_level("WARNING", logger="metabo.data.files"):
        frame, _ = read_table(path)
    assert list(frame.columns) == ["a", "a.1", "b", "a.2", "y"]
    assert frame["a.1"].tolist() == [2, 6]
    (message,) = [r.getMessage() for r in caplog.records]
    assert "names 'a' more than once; read 'a' as 'a.1', 'a' as 'a.2'" in message


def test_a_header_without_repeats_reads_silently(tmp_path: Path, caplog) -> None:
    path = tmp_path / "ok.csv"
    path.write_text("a,b,y\n1,2,0\n")
    with caplog.at_level("WARNING", logger="metabo.data.files"):
        read_table(path)
    assert not caplog.records


@pytest.mark.parametrize("name", ["t.tsv", "t.tsv.gz", "t.TSV"])
def test_tab_separated_files_are_read_by_their_extension(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    frame = pd.DataFrame({"a b": [1.5, 2.5], "c": ["x", "y"], "y": [0, 1]})
    frame.to_csv(path, sep="\t", index=False)
    read, _ = read_table(path)
    pd.testing.assert_frame_equal(read, frame)


@pytest.mark.parametrize(("cells", "expected"), [
    (['"0,5"', '"-1,25"', "3", '"2,5e-3"'], [0.5, -1.25, 3.0, 0.0025]),  # decimal commas
    (['"1,5"', '"1,234"', "7"], [1.5, 1.234, 7.0]),  # "1,5" decides: decimals
    (['"1,234"', '"12,345,678"', "5"], [1234.0, 12345678.0, 5.0]),  # two groups decide: thousands
    (['"1,234.5"', '"-2,000"', "9.25"], [1234.5, -2000.0, 9.25]),  # a decimal point: thousands
])
def test_numbers_written_with_commas_in_a_comma_csv_are_numbers(tmp_path, cells, expected):
    path = tmp_path / "t.csv"
    path.write_text("x,class\n" + "".join(f"{c},{'ab'[i % 2]}\n" for i, c in enumerate(cells)))
    frame, _ = read_table(path)
    assert pd.api.types.is_numeric_dtype(frame["x"])
    assert frame["x"].tolist() == pytest.approx(expected)


@pytest.mark.parametrize("cells", [
    ['"1,234"', '"5,678"', "12"],  # thousands or three decimals: undecided
    ['"1,5"', '"1,234,567"'],  # a decimal comma and thousands groups: not one way of writing
    ['"a,b"', '"1,5"'],  # words
])
def test_text_that_is_not_one_way_of_writing_numbers_stays_text(tmp_path, cells, caplog):
    path = tmp_path / "t.csv"
    path.write_text("x,class\n" + "".join(f"{c},{'ab'[i % 2]}\n" for i, c in enumerate(cells)))
    frame, _ = read_table(path)
    assert frame["x"].tolist() == [c.strip('"') for c in cells]
    assert ("may group thousands" in caplog.text) == (cells[0] == '"1,234"')


def test_a_decimal_comma_column_is_numeric_for_the_model(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("x,class\n" + "".join(f'"{i},{i % 7}",{"ab"[i % 2]}\n' for i in range(40)))
    dataset = load_file(path, "class")
    assert list(dataset.feature_kinds) == ["numeric"]
    assert dataset.X["x"].iloc[3] == pytest.approx(3.3)
