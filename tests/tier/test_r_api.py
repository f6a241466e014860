"""The [[r_api]] rows of r_rules.toml (what R 4.5 changed for compiled code, from R's NEWS) against
both R releases: each row's snippet must fail to build with the R its `R` names and build with the
other (unless the row records that the measurement contradicts NEWS: breaks_on_measured = false); removed entry points must be gone from that R's libR.so and their NEWS must say so."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from rcompat.data import data_path, load_toml
from rcompat.versions import matches

ROWS = load_toml(data_path("r_rules.toml"), "r_api", required=("id", "R", "kind", "names", "source", "confidence"))
BUILT = [row for row in ROWS if row["kind"] in ("header", "cxx")]

DESCRIPTION = "Package: rcompatprobe\nVersion: 0.1\nTitle: Probe\nDescription: Probe.\nLicense: MIT\n" \
              "Authors@R: person('a', 'b', email = 'a@b.c', role = c('aut', 'cre'))\n"


def stage(row: dict, where: Path) -> list[str]:
    """The row's snippet on disk; the R command (relative to `where`) that builds it."""
    where.mkdir(parents=True, exist_ok=True)
    if row["kind"] == "header":
        (where / "probe.c").write_text(row["snippet"])
        return ["R", "CMD", "SHLIB", "-o", "probe.so", "probe.c"]
    (where / "pkg" / "src").mkdir(parents=True)
    (where / "pkg" / "DESCRIPTION").write_text(DESCRIPTION)
    (where / "pkg" / "NAMESPACE").write_text("useDynLib(rcompatprobe)\n")
    (where / "pkg" / "src" / "probe.cpp").write_text(row["snippet"])
    (where / "lib").mkdir()
    return ["R", "CMD", "INSTALL", "--no-docs", "--no-multiarch", "-l", "lib", "pkg"]


def host_r_version() -> str:
    out = subprocess.run(["Rscript", "-e", "cat(R.version$major, R.version$minor, sep='.')"],
                         capture_output=True, text=True, timeout=60)
    return out.stdout.strip()


@pytest.mark.parametrize("row", BUILT, ids=[row["id"] for row in BUILT])
def test_snippet_fails_only_on_the_r_it_names(row, tier, tier_facts, tmp_path):
    if not shutil.which("R"):
        pytest.skip("the host has no R to build the other side with")
    where = tier.host_dir / "api" / row["id"]
    argv = stage(row, where)
    inside = tier.sh(f"cd {tier.inside}/api/{row['id']} && " + " ".join(argv), timeout=300)
    host_argv = stage(row, tmp_path / "host")
    on_host = subprocess.run(host_argv, cwd=tmp_path / "host", capture_output=True, text=True, timeout=300)
    results = {tier_facts["R"]: inside, host_r_version(): on_host}
    for version, proc in results.items():
        # a row whose NEWS claim was measured false keeps saying so (breaks_on_measured = false)
        breaks = matches(version, row["R"]) and row.get("breaks_on_measured", True)
        assert (proc.returncode != 0) == breaks, (
            f"{row['id']}: with R {version} the build {'succeeded' if proc.returncode == 0 else 'failed'}:\n"
            f"{proc.stdout[-1500:]}\n{proc.stderr[-1500:]}")
        if breaks:
            assert any(name in proc.stdout + proc.stderr for name in row["names"])


def test_removed_entry_points_are_gone_from_libr(tier, tier_facts):
    proc = tier.sh("nm -D --defined-only /usr/lib/R/lib/libR.so", check=True)
    exported = {line.split()[-1] for line in proc.stdout.splitlines() if line.strip()}
    for row in (r for r in ROWS if r["kind"] == "removed-entry-point"):
        if matches(tier_facts["R"], row["R"]):
            assert not set(row["names"]) & exported, row["id"]


def test_every_row_is_in_the_news_of_its_r(tier, tier_facts):
    """The NEWS the rows quote is the NEWS of the R in the root (R 4.5.0's own /usr/share/R/doc/NEWS)."""
    if not tier_facts["R"].startswith("4.5"):
        pytest.skip("the root's R is not 4.5: its NEWS has no 4.5.0 section to check the rows against")
    news = " ".join((tier.root / "usr/share/R/doc/NEWS").read_text().split())
    assert "CHANGES IN R 4.5.0" in news
    for row in ROWS:
        quoted = row["source"].split("'")[1]   # the first quoted sentence of the source
        assert " ".join(quoted.split()) in news, row["id"]
