"""The real `rcompat` CLI: cuda probe/libs, matrix check/validate, device; exit codes 0/1/2."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def test_matrix_check_hypothetical_stack_exits_1_with_the_fix(cli):
    r = cli("matrix", "check", "--driver", "535.104", "--cuda", "12.4", "--torch", "2.3.0")
    assert r.returncode == 1, r.stderr
    assert "FAIL  CUDA-MATRIX-TORCH" in r.stdout
    assert "install the cu121 build of torch 2.3.0" in " ".join(r.stdout.split())
    # one problem, one failing line: no CUDA-MATRIX summary repeating the torch layer's message
    assert "summary: 1 warn, 1 fail" in r.stdout and "CUDA-MATRIX " not in r.stdout


def test_matrix_check_json_is_a_report_with_the_stack(cli):
    r = cli("matrix", "check", "--driver", "550.54.14", "--cuda", "12.4", "--torch", "2.4.1", "--format", "json")
    assert r.returncode == 0, r.stdout + r.stderr
    data = json.loads(r.stdout)
    assert data["command"] == "matrix check"
    assert data["facts"]["cuda_matrix"]["stack"] == {"driver": "550.54.14", "cuda": "12.4", "torch": "2.4.1"}
    assert [f["status"] for f in data["findings"]] == ["ok", "ok", "ok"]


def test_matrix_check_observed_machine(cli):
    r = cli("matrix", "check", "--format", "json")
    assert r.returncode in (0, 1), r.stderr
    data = json.loads(r.stdout)
    assert data["facts"]["cuda_matrix"]["observed"] is True
    assert data["findings"][-1]["id"] == "CUDA-MATRIX"


def test_matrix_validate_packaged_ok_and_contradictory_fixture_fails(cli):
    ok = cli("matrix", "validate")
    assert ok.returncode == 0, ok.stdout
    bad = cli("matrix", "validate", "--tables", str(HERE / "tables_contradictory"), "--format", "json")
    assert bad.returncode == 1
    data = json.loads(bad.stdout)
    titles = [f["title"] for f in data["findings"] if f["status"] == "fail"]
    assert any("torch_builds.csv:4" in t and "cuda_driver.csv" in t for t in titles)
    assert titles[-1] == "8 contradiction(s) in the CUDA tables"


@pytest.mark.parametrize("args,message", [
    (("matrix", "check", "--driver", "latest"), "rcompat: error: driver 'latest' is not a version"),
    (("matrix", "validate", "--tables", "/nonexistent"), "rcompat: error: tables directory /nonexistent does not exist"),
    (("cuda", "libs", "--dir", "/nonexistent"), "rcompat: error: --dir /nonexistent: no such directory"),
])
def test_own_errors_exit_2_with_one_line(cli, args, message):
    r = cli(*args)
    assert r.returncode == 2
    assert r.stderr.strip() == message


def test_malformed_tables_exit_2(cli, tmp_path):
    (tmp_path / "torch_builds.csv").write_text("torch,cuda,source\n2.4,twelve,somewhere\n")
    r = cli("matrix", "validate", "--tables", str(tmp_path))
    assert r.returncode == 2 and "cuda 'twelve' is not a version" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_device_prints_choice_and_reason(cli, tmp_path):
    r = cli("device", "--format", "json", env={"XDG_CACHE_HOME": str(tmp_path)})
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert data["device"] in ("cpu", "cuda") and data["reason"]
    text = cli("device", "--no-cache", env={"CUDA_ENABLE": "0"})
    assert text.stdout.startswith("cpu: CUDA_ENABLE=0 disables CUDA")


def test_cuda_probe_json_and_libs(cli):
    r = cli("cuda", "probe", "--format", "json", "--no-r")
    assert r.returncode == 0, r.stderr
    data = json.loads(r.stdout)
    assert set(data) >= {"nvml", "torch", "libraries", "stack"}
    libs = cli("cuda", "libs", "--format", "json")
    assert libs.returncode == 0
    sonames = {lib["soname"] for lib in json.loads(libs.stdout)["libraries"]}
    if Path("/usr/local/cuda-13.0/lib64/libcudart.so.13").exists():
        assert "libcudart.so.13" in sonames


def test_cuda_libs_text_fits_80_columns_and_keeps_every_path(cli):
    """Issue 20 item 5: a row too wide puts its PATH on the next line; the searched list wraps."""
    text = cli("cuda", "libs", env={"COLUMNS": "80"})
    assert text.returncode == 0, text.stderr
    assert text.stdout.startswith("LIBRARY ") and all(len(line) <= 80 for line in text.stdout.splitlines())
    libs = json.loads(cli("cuda", "libs", "--format", "json").stdout)["libraries"]
    words = text.stdout.split()
    assert all(lib["path"] in words for lib in libs)


def test_subcommand_help_and_missing_subcommand(cli):
    assert "Names each incompatible layer" in " ".join(cli("matrix", "check", "--help").stdout.split())
    r = cli("matrix")
    assert r.returncode == 2 and "SUBCOMMAND" in r.stderr
