import os

import pytest

from rcompat.errors import UsageError
from rcompat.inputs import file_problem, require_dir, require_file


def test_each_kind_of_bad_path_is_named(tmp_path):
    regular = tmp_path / "ok.txt"
    regular.write_text("x")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "loop_a").symlink_to(tmp_path / "loop_b")
    (tmp_path / "loop_b").symlink_to(tmp_path / "loop_a")
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    assert file_problem(regular) is None
    assert file_problem(tmp_path / "missing") == "no such file"
    assert file_problem(tmp_path) == "is a directory, not a file"
    assert file_problem(fifo) == "is a FIFO, not a regular file"  # reading a FIFO could block forever
    assert file_problem(tmp_path / "loop_a") == "symbolic link loop"
    assert file_problem(tmp_path / "dangling") == f"dangling symbolic link to {tmp_path / 'gone'}"


def test_require_file_and_dir_raise_one_line_usage_errors(tmp_path):
    with pytest.raises(UsageError, match=r"cannot read table .*: is a directory, not a file"):
        require_file(tmp_path, "table")
    with pytest.raises(UsageError, match="is not a directory"):
        require_dir(__file__, "tables directory")
    assert require_dir(tmp_path) == tmp_path


def test_cli_names_the_real_problem(cli, tmp_path):
    out = cli("lock", "check", str(tmp_path))
    assert out.returncode == 2 and out.stderr.strip().endswith("is a directory, not a file")


def test_open_mapped_refuses_a_fifo_without_waiting_and_has_no_size_limit(tmp_path, monkeypatch):
    from rcompat.inputs import InputRefused, open_mapped

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(InputRefused, match="is a FIFO, not a regular file"):
        open_mapped(fifo)  # a writer never comes: a blocking open would hang here
    big = tmp_path / "big"
    big.write_bytes(b"x" * (2 << 20))
    monkeypatch.setenv("RCOMPAT_MAX_TABLE_MB", "1")
    with open_mapped(big) as fh:
        assert len(fh.read()) == 2 << 20
