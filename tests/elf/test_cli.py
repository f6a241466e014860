"""The `rcompat elf` inspection commands as a user runs them."""
from __future__ import annotations

import json
import subprocess


def test_symbols_cli_prints_like_nm(cli, libs):
    proc = cli("elf", "symbols", "--defined", str(libs["versioned"]))
    theirs = subprocess.run(["nm", "-D", "--defined-only", str(libs["versioned"])], capture_output=True, text=True).stdout
    assert proc.returncode == 0 and set(proc.stdout.splitlines()) == set(theirs.splitlines())
    rows = json.loads(cli("elf", "symbols", "-f", "json", "--undefined", str(libs["needs_version"])).stdout)
    assert {"vfunc@VERS_2.0"} <= {r["decorated"] for r in rows} and not any(r["defined"] for r in rows)
    csv_out = cli("elf", "symbols", "-f", "csv", str(libs["versioned"])).stdout.splitlines()
    assert csv_out[0].startswith("name,version,")


def test_deps_cli_tree_and_exit_code(cli, libs):
    ok = cli("elf", "deps", "--ld-library-path", "", str(libs["rpath_runpath"]))
    assert ok.returncode == 0 and "libwhich.so => " in ok.stdout and "[RUNPATH of libboth.so: $ORIGIN/ru]" in ok.stdout
    lost = cli("elf", "deps", "--ld-library-path", "", str(libs["uses_ghost"]))
    assert lost.returncode == 1 and "not found: libghost.so (needed by libusesghost.so); searched:" in lost.stdout


def test_missing_cli_names_the_symbol_and_exits_1(cli, libs):
    proc = cli("elf", "missing", "--ld-library-path", "", "--search", str(libs["provider_full_dir"]),
               str(libs["needs_b"]))
    assert proc.returncode == 1
    assert f"{libs['needs_b']}: undefined symbol: prov_b" in proc.stdout
    assert "is provided by libprov.so in" in proc.stdout
    assert cli("elf", "missing", "--ld-library-path", "", str(libs["user"])).returncode == 0


def test_versions_and_runtimes_cli(cli, libs, tmp_path):
    import shutil

    shutil.copy(libs["needs_version"], tmp_path)
    shutil.copy(libs["versioned_old"], tmp_path)
    proc = cli("elf", "versions", "--ld-library-path", "", str(tmp_path / "libneedsversion.so"))
    assert proc.returncode == 1 and "version `VERS_2.0' not found" in proc.stdout
    none = cli("elf", "runtimes", str(libs["user"]))
    assert none.returncode == 0 and "no duplicate runtimes" in none.stdout
    assert cli("elf", "runtimes").returncode == 2


def test_help_texts(cli):
    for sub in ("symbols", "deps", "missing", "versions", "runtimes", "coload"):
        proc = cli("elf", sub, "--help")
        assert proc.returncode == 0 and "usage:" in proc.stdout


def test_coload_takes_options_after_first_and_before_double_dash(cli, libs):
    """`FIRST… --local -- THEN…` used to stop with "unrecognized arguments: -- THEN"."""
    plain = cli("elf", "coload", "-f", "json", str(libs["core_v1"]), "--", str(libs["user"]))
    mixed = cli("elf", "coload", str(libs["core_v1"]), "--local", "-f", "json", "--", str(libs["user"]))
    assert plain.returncode == mixed.returncode == 1, mixed.stderr
    first, second = json.loads(plain.stdout), json.loads(mixed.stdout)
    assert first["then"] == second["then"] == [str(libs["user"])]
    assert first["first_error"] == second["first_error"] and "core_new_feature" in first["first_error"]
