"""``metabo.paths.write_atomic``: a file is written whole or not at all."""

from __future__ import annotations

import errno
from pathlib import Path

import pytest

from metabo.exceptions import OutputFileError
from metabo.paths import write_atomic


def test_writes_bytes_and_text(tmp_path: Path) -> None:
    write_atomic(tmp_path / "a.bin", lambda f: f.write(b"\x00\x01"), what="the bytes")
    write_atomic(tmp_path / "a.csv", lambda f: f.write("x\ny\n"), what="the table", mode="w")
    assert (tmp_path / "a.bin").read_bytes() == b"\x00\x01"
    assert (tmp_path / "a.csv").read_bytes() == b"x\ny\n"  # newline="" : no translation
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.bin", "a.csv"]


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "m.skops"
    path.write_bytes(b"old")

    def full_disk(f: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(OutputFileError, match="cannot write the model to .*No space left.*nothing was written"):
        write_atomic(path, full_disk, what="the model")
    assert path.read_bytes() == b"old"
    assert [p.name for p in tmp_path.iterdir()] == ["m.skops"]


def test_other_errors_pass_through_and_clean_up(tmp_path: Path) -> None:
    def broken(f: object) -> None:
        raise ValueError("not serializable")

    with pytest.raises(ValueError, match="not serializable"):
        write_atomic(tmp_path / "m.skops", broken, what="the model")
    assert list(tmp_path.iterdir()) == []


def test_a_missing_folder_is_an_output_error(tmp_path: Path) -> None:
    with pytest.raises(OutputFileError, match="cannot write the predictions to"):
        write_atomic(tmp_path / "nodir" / "p.csv", lambda f: f.write("x"), what="the predictions", mode="w")
