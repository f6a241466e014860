"""Process-map parsing and checks: hand-written fixture maps, the live /proc/self/maps, and a real
child process that maps two copies of libgomp."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rcompat.model import Status
from rcompat.race.maps import MapsError, parse_maps, read_maps
from rcompat.race.mapscheck import analyse, build_id, findings, maps_report

MAPS = Path(__file__).resolve().parents[2] / "fixtures" / "maps"
TWO_LIBTORCH = MAPS / "r_reticulate_cuda_two_libtorch.maps"
CLEAN = MAPS / "python_torch_cpu_clean.maps"
SYSTEM_LIBGOMP = Path("/usr/lib/x86_64-linux-gnu/libgomp.so.1")


def by_id(found):
    return {f.id: f for f in found}


def test_parser_reads_every_field():
    regions = parse_maps(TWO_LIBTORCH.read_text(), str(TWO_LIBTORCH))
    assert len(regions) == 56
    uvm = regions[7]
    assert (uvm.start, uvm.end, uvm.perms, uvm.offset, uvm.dev, uvm.inode, uvm.path) == \
        (0x200400000, 0x200600000, "rw-s", 0, "00:05", 1055, "/dev/nvidia-uvm")
    assert uvm.shared and uvm.size == 2 << 20 and not uvm.anonymous
    assert regions[4].heap and regions[5].anonymous and regions[5].perms == "---p"
    assert regions[-1].path == "[vsyscall]" and regions[-1].end == 0xffffffffff601000
    clean = parse_maps(CLEAN.read_text())
    deleted = [r for r in clean if r.deleted]
    assert [r.path for r in deleted] == ["/tmp/torch_shm_1234"]
    assert [r.path for r in clean if r.path.startswith("[anon")] == ["[anon:glibc.loader]"]


def test_fixture_with_driver_mappings_and_two_libtorch_copies():
    facts = analyse(parse_maps(TWO_LIBTORCH.read_text()), mmap_min_addr=65536)
    assert facts["gpu_roles"] == {"nvidiactl": 1, "nvidia-uvm": 3, "nvidia-device": 2, "libcuda": 4}
    assert facts["r_loaded"] == ["/usr/lib/R/lib/libR.so"]
    # the 4 GiB "---p" reservation is not memory anybody writes: it is not a "large region"
    assert [r["size"] for r in facts["large_anonymous"]] == [64 << 20, 128 << 20, 128 << 20]
    assert [(n["relation"], n["driver"].split()[-1]) for n in facts["neighbours"]] == \
        [("adjacent", "/dev/nvidia0"), ("adjacent", "/dev/nvidia-uvm")]
    dups = {d["runtime"]: d for d in facts["duplicates"]}
    assert set(dups) == {"libtorch", "libc10", "OpenMP"}
    assert dups["libtorch"]["copies"] == [
        "/home/ana/.venvs/dl/lib/python3.11/site-packages/torch/lib/libtorch_cpu.so",
        "/home/ana/R/x86_64-pc-linux-gnu-library/4.3/torch/lib/libtorch_cpu.so"]
    assert dups["OpenMP"]["names"] == ["libgomp.so"]  # the auditwheel hash is not a different runtime
    result = by_id(findings(facts, "fixture"))
    assert result["RACE-MAPS-DUPLICATE"].status is Status.FAIL
    assert "mlverse/torch issue 815" in result["RACE-MAPS-DUPLICATE"].source
    assert result["RACE-MAPS-NEIGHBOURS"].status is Status.WARN
    assert result["RACE-MAPS-GPU"].status is Status.OK
    assert result["RACE-MAPS-MMAP-MIN-ADDR"].status is Status.OK


def test_clean_fixture_and_a_low_mmap_min_addr():
    facts = analyse(parse_maps(CLEAN.read_text()), mmap_min_addr=0)
    result = by_id(findings(facts, "fixture"))
    assert result["RACE-MAPS-GPU"].status is Status.SKIP
    assert "RACE-MAPS-NEIGHBOURS" not in result
    assert result["RACE-MAPS-DUPLICATE"].status is Status.OK
    assert result["RACE-MAPS-MMAP-MIN-ADDR"].status is Status.WARN


def test_overlapping_lines_are_called_out():
    text = TWO_LIBTORCH.read_text() + "7f1d17f00000-7f1d1c000000 rw-p 00000000 00:00 0\n"
    result = by_id(findings(analyse(parse_maps(text), mmap_min_addr=65536), "edited"))
    assert result["RACE-MAPS-OVERLAP"].status is Status.WARN
    assert result["RACE-MAPS-NEIGHBOURS"].status is Status.FAIL  # that region overlaps /dev/nvidia-uvm


def test_malformed_and_missing_inputs_are_rcompat_errors(cli):
    with pytest.raises(MapsError, match=r"malformed.maps:2:"):
        read_maps(file=MAPS / "malformed.maps")
    for args in (["--file", str(MAPS / "malformed.maps")], ["--file", str(MAPS / "nope.maps")],
                 ["--file", str(MAPS)], ["999999999"]):
        out = cli("maps", *args)
        assert out.returncode == 2, args
        assert out.stderr.startswith("rcompat: error: cannot read") or "malformed.maps:2" in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1


def test_fifo_maps_file_is_refused_not_read_forever(cli, tmp_path):
    fifo = tmp_path / "maps.fifo"
    os.mkfifo(fifo)  # no writer: a plain read would block until the test's timeout
    out = cli("maps", "--file", str(fifo), timeout=20)
    assert out.returncode == 2 and "is a FIFO, not a regular file" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("value", ["nan", "-1", "0", "inf"])
def test_bad_large_mib_is_a_usage_error(cli, value):
    out = cli("maps", "--file", str(CLEAN), "--large-mib", value)
    assert out.returncode == 2 and "--large-mib must be a positive number" in out.stderr, out.stderr
    assert "internal error" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_live_self_maps_contains_this_interpreter():
    regions, source = read_maps()
    assert source == f"/proc/{os.getpid()}/maps"
    payload = bytearray(4 << 20)
    address = id(payload)
    owner = [r for r in regions if r.start <= address < r.end]
    assert owner and owner[0].perms.startswith("rw")
    exe = os.path.realpath(sys.executable)
    assert any(os.path.realpath(r.path) == exe for r in regions if r.file_backed) or \
        any("libpython" in r.path for r in regions)
    facts = analyse(regions, live=True, mmap_min_addr=4096)
    assert facts["regions"] == len(regions) and facts["heap"]


def test_two_real_copies_of_libgomp_in_a_live_process(tmp_path):
    if not SYSTEM_LIBGOMP.exists():
        pytest.skip(f"{SYSTEM_LIBGOMP} not present (it comes with gcc/R on Debian)")
    copy = tmp_path / "libgomp.so.1"
    shutil.copy(SYSTEM_LIBGOMP, copy)
    script = ("import ctypes, sys, time; ctypes.CDLL(sys.argv[1]); ctypes.CDLL(sys.argv[2]); "
              "print('loaded', flush=True); time.sleep(60)")
    child = subprocess.Popen([sys.executable, "-c", script, str(SYSTEM_LIBGOMP), str(copy)],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "loaded"
        report = maps_report(pid=child.pid)
    finally:
        child.kill()
        child.wait()
    dup = by_id(report.findings)["RACE-MAPS-DUPLICATE"]
    assert dup.status is Status.FAIL and "OpenMP" in dup.title
    (entry,) = dup.evidence["duplicates"]
    assert entry["copies"] == sorted([os.path.realpath(SYSTEM_LIBGOMP), str(copy)])
    assert entry["same_build"] is True  # a byte copy: one build, still two runtimes


def test_build_id_agrees_with_readelf(null_deref_lib):
    import re
    import subprocess

    via_engine = build_id(null_deref_lib)
    notes = subprocess.run(["readelf", "-n", null_deref_lib], capture_output=True, text=True, check=True).stdout
    assert via_engine == re.search(r"Build ID: ([0-9a-f]+)", notes).group(1)
    assert build_id("/nonexistent/lib.so") is None


def test_cli_maps_file_json_and_exit_code(cli):
    out = cli("maps", "--file", str(TWO_LIBTORCH), "--format", "json")
    assert out.returncode == 1  # duplicate libtorch is a failing finding
    report = json.loads(out.stdout)
    assert report["command"] == "maps"
    assert report["facts"]["maps"]["gpu_roles"]["nvidia-uvm"] == 3
    clean = cli("maps", "--file", str(CLEAN))
    assert clean.returncode == 0 and "RACE-MAPS-DUPLICATE" in clean.stdout


def test_doctor_race_area_is_kept_short(cli, r_and_torch):
    """The doctor's race area runs one small serialized trial and nothing else: asserted on what it
    ran (trials, modes, operations), not on the wall time, which is the machine's."""
    out = cli("doctor", "--only", "race", "--format", "json")
    assert out.returncode == 0, out.stdout + out.stderr
    report = json.loads(out.stdout)
    ids = {f["id"]: f["status"] for f in report["findings"]}
    assert ids["RACE-SERIALIZED"] == "ok" and ids["RACE-MAPS-DUPLICATE"] == "ok"
    assert not any(i.startswith("RACE-UNSAFE") for i in ids)  # the crashing mode is for `rcompat race`
    trial = report["facts"]["race"]["serialized_trial"]
    assert trial["summary"]["trials"] == 1 and trial["config"]["trials"] == 1
    assert (trial["config"]["iterations"], trial["config"]["workers"]) == (4, 2)
    assert trial["summary"]["ops_completed"] > 0 and trial["summary"]["ops_failed"] == 0


def test_an_empty_saved_maps_file_is_refused(cli, tmp_path):
    empty = tmp_path / "empty.maps"
    empty.write_text("")
    out = cli("maps", "--file", str(empty))
    assert out.returncode == 2 and "no mappings" in out.stderr
