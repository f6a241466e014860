import subprocess
import sys
from pathlib import Path

from rcompat.data import cached_toml

REPO = Path(__file__).resolve().parents[2]


def test_packaged_tables_are_not_shadowed_by_the_working_directory(tmp_path, monkeypatch):
    # a file named like a packaged table in the cwd (a user's edited copy) used to replace the packaged one
    (tmp_path / "r_rules.toml").write_text('[[rpy2]]\nid = "X"\nR = ">=0"\npip = "evil"\nsource = "me"\n')
    monkeypatch.chdir(tmp_path)
    cached_toml.cache_clear()
    try:
        assert "evil" not in {row["pip"] for row in cached_toml("r_rules.toml", "rpy2")}
    finally:
        cached_toml.cache_clear()
    out = subprocess.run([sys.executable, str(REPO / "scripts" / "rpy2_requirement.py"), "4.5.0"],
                         capture_output=True, text=True, cwd=str(tmp_path), timeout=60)
    assert out.returncode == 0 and out.stdout.strip().startswith("rpy2"), out.stderr


def test_a_csv_row_longer_than_the_header_is_a_data_error(tmp_path):
    # the surplus cells used to reach str.strip() as a list: an internal AttributeError
    import pytest

    from rcompat.data import load_csv
    from rcompat.errors import DataError

    table = tmp_path / "t.csv"
    table.write_text("# comment\nname,source\na,doc\nb,doc,surplus,more\n")
    with pytest.raises(DataError, match=r"t\.csv: row 3 has 2 more field\(s\) than the header"):
        load_csv(table)
    table.write_text("name,source\na,doc\nb\n")  # a short row still reads, its missing cells empty
    with pytest.raises(DataError, match="row 3 .* lacks 'source'"):
        load_csv(table)
