"""ModelZip's own reading of a plain zip (one read of the directory, STORED members as checked slices)
against zipfile's, on the files the real libraries wrote (tests/models/conftest.py), and its hand-over
to zipfile for everything else (issue 26 item 6: the speed of `model inspect`)."""
from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import pytest

from rcompat.models.archive import Member, ModelZip, _check_name, _suspect_names
from rcompat.models.errors import ModelFileError
from rcompat.models.reader import read_model

TORCH_ZIPS = ["state_dict.pt", "plain_dict.pt", "full_module.pt", "numpy_array.pt", "custom_class.pt",
              "scripted.pt", "traced.pt", "saved_on_cuda0.pt"]


def _open(path: Path) -> ModelZip:
    fh = open(path, "rb")
    return ModelZip(fh, os.fstat(fh.fileno()).st_size, str(path))


def _same_as_zipfile(path: Path) -> ModelZip:
    """ModelZip lists the members zipfile lists, with the same fields, and reads the same bytes."""
    mz = _open(path)
    ref = zipfile.ZipFile(path).infolist()
    assert list(mz.infos) == [i.filename for i in ref]
    for info in ref:
        ours = mz.infos[info.filename]
        assert (ours.header_offset, ours.compress_size, ours.file_size, ours.compress_type, ours.flag_bits,
                ours.CRC) == (info.header_offset, info.compress_size, info.file_size, info.compress_type,
                              info.flag_bits, info.CRC)
        assert mz.read(info.filename) == zipfile.ZipFile(path).read(info)
    return mz


@pytest.mark.parametrize("name", TORCH_ZIPS)
def test_torch_zips_are_read_by_the_directory_reader_as_zipfile_reads_them(model_dir, name):
    mz = _same_as_zipfile(model_dir / name)
    assert all(isinstance(i, Member) for i in mz.infos.values()), "torch's zips should not need zipfile"
    deflated = [n for n, i in mz.infos.items() if i.compress_type != zipfile.ZIP_STORED]
    assert (mz._zip is None) == (not deflated), "zipfile should have read the deflated members, and only them"
    if name in ("scripted.pt", "traced.pt"):
        assert deflated and all("/code/" in n for n in deflated)  # torch.jit.save deflates its code/ files


@pytest.mark.parametrize("name", ["plain.keras", "lambda.keras"])
def test_keras_zips_read_the_same(keras_dir, name):
    _same_as_zipfile(keras_dir / name)  # deflated members: read by zipfile, bounded, whichever lists them


@pytest.mark.parametrize("name", TORCH_ZIPS)
def test_an_archive_comment_hands_the_archive_to_zipfile_with_the_same_inspection(model_dir, tmp_path, name):
    copy = tmp_path / name
    with zipfile.ZipFile(model_dir / name) as src, zipfile.ZipFile(copy, "w") as dst:
        for info in src.infolist():
            dst.writestr(info, src.read(info))
        dst.comment = b"written by a test"
    mz = _same_as_zipfile(copy)
    assert not any(isinstance(i, Member) for i in mz.infos.values())
    ours, theirs = read_model(copy).to_dict(), read_model(model_dir / name).to_dict()
    assert {k: v for k, v in ours.items() if k not in ("path", "size_bytes")} == \
        {k: v for k, v in theirs.items() if k not in ("path", "size_bytes")}


def test_a_stored_member_with_a_changed_byte_fails_as_zipfile_fails(model_dir, tmp_path):
    raw = bytearray((model_dir / "state_dict.pt").read_bytes())
    ref = zipfile.ZipFile(io.BytesIO(bytes(raw))).getinfo(next(n for n in zipfile.ZipFile(model_dir / "state_dict.pt")
                                                               .namelist() if n.endswith("data.pkl")))
    local_extra = int.from_bytes(raw[ref.header_offset + 28:ref.header_offset + 30], "little")
    start = ref.header_offset + 30 + len(ref.filename.encode()) + local_extra
    raw[start + 10] ^= 0xFF  # inside data.pkl: the CRC-32 no longer matches
    bad = tmp_path / "bad_crc.pt"
    bad.write_bytes(bytes(raw))
    with pytest.raises(ModelFileError, match="Bad CRC-32"):
        _open(bad).read(ref.filename)


REFUSED = ["../x", "a/../b", "a/..", "..", "/abs", "\\abs", "C:x", "a\\..\\b", "c:"]
ALLOWED = ["a/b", "a..b", "..a", "a/..b", "x/y/z..", "ab:c", ".", "a/./b", "...", "archive/data/0"]


@pytest.mark.parametrize("name", REFUSED + ALLOWED)
def test_the_one_scan_over_all_names_flags_every_name_the_check_refuses(name):
    refused = name in REFUSED
    with pytest.raises(ModelFileError) if refused else _no_error():
        _check_name("f", name)
    names = ["archive/data.pkl", name, "archive/version"]
    if refused:
        assert _suspect_names(names)
    assert not _suspect_names(["archive/data.pkl", "archive/data/0"])


class _no_error:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_a_name_that_is_not_utf8_is_refused_as_zipfile_refuses_it(tmp_path):
    """The UTF-8 flag on a name whose bytes are not UTF-8 (a fuzz case of benchmarks/fuzz_model.py): the
    directory reader hands the archive to zipfile, whose error is the one-line refusal."""
    good = tmp_path / "good.zip"
    with zipfile.ZipFile(good, "w") as zf:
        zf.writestr("arch/é.pkl", b"x")  # non-ASCII: zipfile sets the UTF-8 flag
    raw = good.read_bytes().replace("é".encode(), b"\xff\xfe")
    bad = tmp_path / "bad.zip"
    bad.write_bytes(raw)
    with pytest.raises(UnicodeDecodeError):
        zipfile.ZipFile(bad)
    with pytest.raises(ModelFileError, match="truncated or corrupt zip"):
        _open(bad)


def test_a_storage_without_its_member_is_refused_by_name(model_dir, tmp_path):
    """The storages are checked against their members all at once; the one missing is still the one named."""
    src = model_dir / "state_dict.pt"
    with zipfile.ZipFile(src) as zf:
        members = [n for n in zf.namelist() if "/data/" in n]
        dropped = sorted(members)[-1]
        cut = tmp_path / "cut.pt"
        with zipfile.ZipFile(cut, "w") as out:
            for info in zf.infolist():
                if info.filename != dropped:
                    out.writestr(info, zf.read(info))
    key = dropped.rsplit("/", 1)[1]
    with pytest.raises(ModelFileError, match=f"storage '{key}' has no member '{dropped}'"):
        read_model(cut)
