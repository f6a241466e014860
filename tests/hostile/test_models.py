"""Hostile model files: `rcompat model inspect/check` read them without running or extracting anything.

Each is built here byte by byte (no torch needed): a pickle that would run os.system (a marker file
proves it never ran), a zip bomb member, traversal member names, marks nested 100,000 deep, truncated
members and storages, a length field claiming gigabytes. All but the os.system one are refused with
exit 2 and one line; that one is readable data, so `model check` reports it (exit 1, MODEL-PICKLE fail).
"""
from __future__ import annotations

import io
import json
import struct
import zipfile

import pytest

from rcompat.models.pickles import MAX_MARKS


def torch_zip(path, data_pkl: bytes, extra: dict | None = None, compress=zipfile.ZIP_STORED, top="archive"):
    with zipfile.ZipFile(path, "w", compression=compress) as z:
        z.writestr(f"{top}/data.pkl", data_pkl)
        z.writestr(f"{top}/version", "3\n")
        for name, data in (extra or {}).items():
            z.writestr(name, data)
    return path


def system_pickle(marker) -> bytes:
    """What `pickle.dumps` of an object whose __reduce__ returns (os.system, (cmd,)) writes, protocol 2."""
    cmd = f"touch {marker}".encode()
    return b"\x80\x02cposix\nsystem\nq\x00X" + struct.pack("<I", len(cmd)) + cmd + b"q\x01\x85q\x02Rq\x03."


def test_os_system_pickle_is_reported_never_run(harness, sentinel):
    marker = sentinel.outside / "ran"
    model = torch_zip(sentinel.inputs / "evil.pt", system_pickle(marker))
    for argv in (("model", "inspect", str(model)), ("model", "check", str(model), "--device", "cpu", "--format", "json")):
        out = sentinel.run(*argv)
        assert not marker.exists(), "the pickle ran"
        assert sentinel.changes() == []
    assert out.returncode == 1, out.stderr
    (pickle_finding,) = [f for f in json.loads(out.stdout)["findings"] if f["id"] == "MODEL-PICKLE"]
    assert pickle_finding["status"] == "fail" and "posix.system" in pickle_finding["message"]


def _refused(harness, sentinel, path, *needles):
    for command in ("inspect", "check"):
        out = sentinel.run("model", command, str(path), *(("--device", "cpu") if command == "check" else ()),
                           mem_mb=768)
        harness.assert_refused(sentinel, out, *needles)


def test_zip_bomb_member_is_refused(harness, sentinel):
    bomb = b"\x80\x02" + b"N" * (200 << 20) + b"."  # 200 MB of NONE opcodes deflate to ~200 KB
    path = torch_zip(sentinel.inputs / "bomb.pt", bomb, compress=zipfile.ZIP_DEFLATED)
    _refused(harness, sentinel, path, "zip bomb")


@pytest.mark.parametrize("name", ["../../outside/x", "/etc/passwd", "archive/../../x"])
def test_traversal_member_names_are_refused(harness, sentinel, name):
    path = torch_zip(sentinel.inputs / "trav.pt", b"\x80\x02}q\x00.", {name: b"x"})
    _refused(harness, sentinel, path, "path traversal")


def test_deep_nesting_is_refused(harness, sentinel):
    deep = b"\x80\x02" + b"(" * 100_000 + b"t" * 100_000 + b"."
    path = torch_zip(sentinel.inputs / "deep.pt", deep)
    _refused(harness, sentinel, path, f"{MAX_MARKS:,} deep")


def test_truncated_archive_is_refused(harness, sentinel):
    full = io.BytesIO()
    torch_zip(full, b"\x80\x02}q\x00.", {"archive/data/0": b"\0" * 4096})
    path = sentinel.inputs / "cut.pt"
    path.write_bytes(full.getvalue()[:3000])
    _refused(harness, sentinel, path, "cut.pt")


def test_storage_shorter_than_its_tensor_is_refused(harness, sentinel):
    pkl = (b"\x80\x02}q\x00X\x01\x00\x00\x00wctorch._utils\n_rebuild_tensor_v2\n((X\x07\x00\x00\x00storage"
           b"ctorch\nFloatStorage\nX\x01\x00\x00\x000X\x03\x00\x00\x00cpuM\x00\x04tQK\x00M\x00\x04\x85K\x01\x85\x89"
           b"ccollections\nOrderedDict\n)RtRs.")
    path = torch_zip(sentinel.inputs / "short.pt", pkl, {"archive/data/0": b"\0" * 16})
    _refused(harness, sentinel, path, "truncated member")


def test_length_claiming_gigabytes_is_refused(harness, sentinel):
    path = torch_zip(sentinel.inputs / "huge.pt", b"\x80\x02\x8e" + struct.pack("<Q", 1 << 40) + b"abc")
    _refused(harness, sentinel, path, "not a readable pickle")


def test_safetensors_header_past_the_end_is_refused(harness, sentinel):
    header = json.dumps({"w": {"dtype": "F32", "shape": [1 << 30], "data_offsets": [0, 4 << 30]}}).encode()
    path = sentinel.inputs / "w.safetensors"
    path.write_bytes(struct.pack("<Q", len(header)) + header)
    _refused(harness, sentinel, path, "truncated")
