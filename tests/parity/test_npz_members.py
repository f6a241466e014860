"""The parity record reader's own path through the npz (rcompat.parity.npzmembers): members sliced from
the file's mapping, numpy's header parsed by one expression, inputs decoded only when asked. Small
records written by write_record (no torch needed), read back and checked against numpy's np.load."""
from __future__ import annotations

import json
import struct
import zipfile

import numpy as np
import pytest

from rcompat.parity.comparison import compare_records
from rcompat.parity.npzfile import FORMAT, FORMAT_VERSION, ParityFileError, ParityRecord, read_record, write_record


def _record(path, inputs=None, outputs=None, compressed=False):
    rng = np.random.default_rng(3)
    outputs = outputs if outputs is not None else {
        "matmul_f32": rng.random((6, 4)).astype("float32"),
        "mlp_f64.grad": np.asfortranarray(rng.random((5, 3))),  # fortran_order True in its header
        "scalar_f64": np.float64(2.5)[()] * np.ones(()),  # shape ()
        "count_i64": np.arange(7, dtype=np.int64)}
    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, "side": "python", "seed": 0,
                "cases": {name: {"status": "ok", "message": "", "outputs": {name: str(a.dtype)}}
                          for name, a in outputs.items()}}
    inputs = inputs if inputs is not None else {"a": rng.random((8, 8)), "b": rng.random(300)}
    if not compressed:
        return write_record(path, ParityRecord(manifest, inputs=inputs, outputs=outputs))
    arrays = {"manifest": np.array(json.dumps(manifest)), **{f"input/{k}": v for k, v in inputs.items()}, **outputs}
    with open(path, "wb") as fh:
        np.savez_compressed(fh, **arrays)
    return path


@pytest.mark.parametrize("compressed", [False, True], ids=["stored", "deflated"])
def test_every_array_reads_as_np_load_reads_it(tmp_path, compressed):
    path = _record(tmp_path / "r.npz", compressed=compressed)
    record = read_record(path)
    with np.load(path, allow_pickle=False) as npz:
        for name, array in record.outputs.items():
            assert array.dtype == npz[name].dtype and array.shape == npz[name].shape
            assert np.array_equal(array, npz[name])
        assert sorted(record.inputs) == ["a", "b"]
        for name in record.inputs:
            assert np.array_equal(record.inputs[name], npz[f"input/{name}"])
    assert record.outputs["mlp_f64.grad"].flags.f_contiguous and record.outputs["scalar_f64"].shape == ()


def test_identical_inputs_are_compared_without_decoding_them(tmp_path):
    a, b = read_record(_record(tmp_path / "a.npz")), read_record(_record(tmp_path / "b.npz"))
    report = compare_records(a, b)
    inputs = next(f for f in report.findings if f.id == "PARITY-INPUTS")
    assert inputs.status.value == "ok" and "2 arrays" in inputs.title
    assert a.inputs.decoded == set() and b.inputs.decoded == set()


def test_a_changed_input_is_decoded_and_named(tmp_path):
    base = _record(tmp_path / "a.npz")
    with np.load(base) as npz:
        inputs = {"a": npz["input/a"] + 1e-12, "b": npz["input/b"]}
    a, b = read_record(base), read_record(_record(tmp_path / "b.npz", inputs=inputs))
    inputs_finding = next(f for f in compare_records(a, b).findings if f.id == "PARITY-INPUTS")
    assert inputs_finding.status.value == "fail" and "Inputs that differ: a " in inputs_finding.message
    assert a.inputs.decoded == {"a"} == b.inputs.decoded  # b's fingerprints matched: never decoded


def test_the_same_values_stored_otherwise_are_the_same_inputs(tmp_path):
    """A fingerprint that differs only decides that the arrays are compared: C and Fortran order of one
    matrix are two byte layouts of the same input."""
    matrix = np.random.default_rng(4).random((6, 5))
    a = read_record(_record(tmp_path / "a.npz", inputs={"m": matrix}))
    b = read_record(_record(tmp_path / "b.npz", inputs={"m": np.asfortranarray(matrix)}))
    assert a.inputs.members["m"].fingerprint != b.inputs.members["m"].fingerprint
    inputs_finding = next(f for f in compare_records(a, b).findings if f.id == "PARITY-INPUTS")
    assert inputs_finding.status.value == "ok"


def test_a_corrupt_input_is_refused_when_it_is_read(tmp_path):
    path = _record(tmp_path / "r.npz", inputs={"a": np.zeros(64)})
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("input/a.npy")
    data[_member_start(data, info) + 200] ^= 0xFF  # inside the array's bytes (its header is 128)
    path.write_bytes(bytes(data))
    record = read_record(path)  # the outputs and manifest are checked now, the input when read
    with pytest.raises(ParityFileError, match="CRC"):
        record.inputs["a"]


def test_a_corrupt_output_is_refused_at_once(tmp_path):
    path = _record(tmp_path / "r.npz")
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        info = archive.getinfo("count_i64.npy")
    data[_member_start(data, info) + 130] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ParityFileError, match="CRC"):
        read_record(path)


def _member_start(data: bytes, info: zipfile.ZipInfo) -> int:
    """Where a member's bytes start: after the local header, its name and its extra field."""
    name_len, extra_len = struct.unpack_from("<HH", data, info.header_offset + 26)
    return info.header_offset + 30 + name_len + extra_len


def test_a_header_numpy_did_not_write_is_parsed_by_numpy(tmp_path):
    """Keys in another order: not numpy's own layout, so numpy's parser reads it, to the same array."""
    path = _record(tmp_path / "r.npz")
    canonical = b"{'descr': '<i8', 'fortran_order': False, 'shape': (7,), }"
    other = b"{'shape': (7,), 'fortran_order': False, 'descr': '<i8'}  "
    assert len(other) == len(canonical)
    edited = tmp_path / "edited.npz"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(edited, "w") as target:  # zipfile writes the CRCs
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "count_i64.npy":
                assert data.count(canonical) == 1
                data = data.replace(canonical, other)
            target.writestr(info.filename, data)
    assert np.array_equal(read_record(edited).outputs["count_i64"], np.arange(7))
