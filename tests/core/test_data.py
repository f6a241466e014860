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
