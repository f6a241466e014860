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


def _rewritten(src: Path, dst: Path, order=None, replace: "dict[str, bytes] | None" = None,
               extra: "list[tuple[str, bytes]] | None" = None, leave_out: str | None = None) -> Path:
    """`src`'s members written again by zipfile (STORED), in `order` (a key over the infos), members in
    `replace` with other bytes, `leave_out` left out, `extra` (name, bytes) appended after them."""
    with zipfile.ZipFile(src) as zf, zipfile.ZipFile(dst, "w") as out:
        infos = sorted(zf.infolist(), key=order) if order else zf.infolist()
        for info in infos:
            if info.filename != leave_out:
                out.writestr(info, (replace or {}).get(info.filename, zf.read(info)))
        for name, data in extra or []:
            with pytest.warns(UserWarning, match="Duplicate name"):
                out.writestr(name, data)
    return dst


def _storage_members(path: Path) -> list[str]:
    with zipfile.ZipFile(path) as zf:
        return sorted((n for n in zf.namelist() if "/data/" in n), key=lambda n: int(n.rsplit("/", 1)[1]))


def test_a_storage_without_its_member_is_refused_by_name(model_dir, tmp_path):
    """The storages are checked against their members all at once; the one missing is still the one named."""
    src = model_dir / "state_dict.pt"
    dropped = _storage_members(src)[-1]
    cut = _rewritten(src, tmp_path / "cut.pt", leave_out=dropped)
    key = dropped.rsplit("/", 1)[1]
    with pytest.raises(ModelFileError, match=f"storage '{key}' has no member '{dropped}'"):
        read_model(cut)


def test_storages_are_checked_in_one_slice_where_listed_in_order_and_one_by_one_otherwise(model_dir, tmp_path,
                                                                                         monkeypatch):
    """torch.save lists a state dict's storages one after another in their keys' order: their sizes are one
    slice of the directory. A directory in another order reads the same, by name."""
    from rcompat.models import torchfiles

    src = model_dir / "state_dict.pt"
    taken = []
    real = torchfiles._listed_in_order
    monkeypatch.setattr(torchfiles, "_listed_in_order", lambda *a: taken.append(real(*a)) or taken[-1])
    as_written = read_model(src)
    assert len(as_written.tensors) >= 2 and taken[-1] is not None
    reversed_ = _rewritten(src, tmp_path / "reversed.pt", order=lambda i: -i.header_offset)
    assert read_model(reversed_).tensors == as_written.tensors and taken[-1] is None


def test_a_short_storage_member_listed_in_order_is_refused_by_name(model_dir, tmp_path):
    src = model_dir / "state_dict.pt"
    members = _storage_members(src)
    cut = _rewritten(src, tmp_path / "short.pt", replace={members[1]: b"\0" * 3})
    with pytest.raises(ModelFileError, match=f"member '{members[1]}' holds 3 bytes"):
        read_model(cut)


def test_a_storage_listed_twice_is_checked_in_its_last_listing_as_zipfile_reads_it(model_dir, tmp_path):
    """Names listed twice: zipfile (and ModelZip) read the last; the in-order slice would see the first,
    so it is not taken there. A short last copy is refused though the first run of names is whole."""
    src = model_dir / "state_dict.pt"
    members = _storage_members(src)
    twice = _rewritten(src, tmp_path / "twice.pt", extra=[(members[-1], b"\0" * 3)])
    with pytest.raises(ModelFileError, match=f"member '{members[-1]}' holds 3 bytes"):
        read_model(twice)
