"""The bulk read of a state dict's tensor records (rcompat/models/torchrecords.py) against the symbolic
machine's walk, the reference: on every real file torch writes here and on synthesized variants, the
same facts field by field, the bulk path taken where it should be (so a bulk read that always fell back
would fail here), and every mutated or truncated pickle answered exactly as the walk answers it."""
from __future__ import annotations

import io
import pickle
import zipfile
from collections import OrderedDict
from pathlib import Path

import pytest

from rcompat.models import torchrecords
from rcompat.models.archive import ModelZip
from rcompat.models.errors import ModelFileError
from rcompat.models.reader import read_model
from rcompat.models.torchfiles import read_pickle

torch = pytest.importorskip("torch")


def outcome(data: bytes, bulk: bool):
    """What read_pickle makes of `data`, as plain values (a refusal: its message), and whether in bulk."""
    try:
        read = read_pickle(data, "t.pt", "t/data.pkl", bulk=bulk)
    except ModelFileError as exc:
        return ("refused", str(exc)), False
    facts = read.facts
    return (facts.globals, facts.opcodes, facts.end, facts.dynamic_globals, facts.extensions, read.top_level,
            [t.to_dict() for t in read.tensors], list(read.storages.items())), read.bulk


def assert_same(data: bytes) -> bool:
    """The bulk read equals the walk on `data`; returns whether it was read in bulk."""
    fast, used = outcome(data, bulk=True)
    reference, walked_in_bulk = outcome(data, bulk=False)
    assert not walked_in_bulk
    assert fast == reference
    return used


def data_pkl(path: Path) -> bytes:
    with open(path, "rb") as fh:
        mz = ModelZip(fh, path.stat().st_size, str(path))
        member = next(n for n in mz.infos if n.endswith("/data.pkl") and n.count("/") == 1)
        return mz.read(member)


def saved(obj) -> bytes:
    buf = io.BytesIO()
    torch.save(obj, buf)
    with zipfile.ZipFile(io.BytesIO(buf.getvalue())) as zf:
        return zf.read(next(n for n in zf.namelist() if n.endswith("/data.pkl")))


class _Storage:
    def __init__(self, pid):
        self.pid = pid


class _Tensor:
    """Pickles as torch's tensor record does, with any storage size (torch's own needs the bytes)."""

    def __init__(self, storage, shape, stride):
        self.storage, self.shape, self.stride = storage, shape, stride

    def __reduce_ex__(self, protocol):
        return torch._utils._rebuild_tensor_v2, (self.storage, 0, self.shape, self.stride, False, OrderedDict())


def torch_like(state: dict) -> bytes:
    """A data.pkl written as torch.save writes it (pickle protocol 2, persistent ids for storages)."""
    class Pickler(pickle.Pickler):
        def persistent_id(self, obj):
            return obj.pid if isinstance(obj, _Storage) else None

    buf = io.BytesIO()
    Pickler(buf, protocol=2).dump(state)
    return buf.getvalue()


def _variants() -> dict[str, tuple[bytes, bool]]:
    """name -> (data.pkl, read in bulk?)"""
    base = torch.arange(20.0)
    shapes = [(), (0,), (1,), (3, 4), (2, 3, 4), (1, 2, 3, 4), (1,) * 8, (300,), (70000,)]
    dtypes = [torch.bfloat16, torch.float16, torch.int8, torch.bool, torch.int64, torch.complex64, torch.uint8,
              torch.float64, torch.int16, torch.int32]
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.ones(2))], lr=0.1, momentum=0.9)
    optimizer.param_groups[0]["params"][0].grad = torch.ones(2)
    optimizer.step()
    huge = _Storage(("storage", torch.FloatStorage, "0", "cpu", 2 ** 40))
    negative = _Storage(("storage", torch.FloatStorage, "0", "cpu", -5))
    places = [_Storage(("storage", torch.FloatStorage, str(i), where, 4)) for i, where in enumerate(
        ["cpu", "cuda:1", "cpu", "cuda:1"])]
    return {
        "shapes": (saved({f"t{i}": torch.zeros(s) for i, s in enumerate(shapes)}), True),
        "dtypes": (saved({str(d): torch.ones(3, dtype=d) for d in dtypes}), True),
        "views and shared storages": (saved({"a": base, "b": base[5:], "c": base[2:8].view(2, 3),
                                             "d": base[::2]}), True),
        "non-ASCII and long names": (saved({"é.weight": torch.ones(1), "层.bias": torch.ones(2), "😀": torch.ones(1),
                                            "": torch.ones(1), "n" * 300: torch.ones(1)}), True),
        "a LONG shape": (saved({"wide": torch.zeros(1).expand(2 ** 31 + 5)}), True),
        "one tensor (SETITEM)": (saved({"only": torch.ones(2)}), True),
        "2,500 tensors (batches, LONG_BINPUT)": (saved({f"l{i}": torch.ones(i % 5 + 1) for i in range(2500)}), True),
        "requires_grad": (saved({"leaf": torch.ones(2, requires_grad=True)}), True),
        "a LONG storage size": (torch_like({"big": _Tensor(huge, (2 ** 40,), (1,))}), True),
        "a negative storage size": (torch_like({"bad": _Tensor(negative, (5,), (1,))}), False),
        "two locations in turn": (torch_like({f"t{i}": _Tensor(p, tuple([4]), tuple([1]))  # fresh tuples, as torch's
                                              for i, p in enumerate(places)}), True),
        "a shape tuple fetched again": (torch_like({f"t{i}": _Tensor(p, (4,), (1,)) for i, p in enumerate(places)}),
                                        False),
        "state_dict() with _metadata": (saved(torch.nn.Sequential(torch.nn.Linear(2, 3),
                                                                  torch.nn.BatchNorm1d(3)).state_dict()), True),
        "the same tensor twice": (saved({"a": base, "b": base}), False),
        "nn.Parameter": (saved({"p": torch.nn.Parameter(torch.ones(2))}), False),
        "nested dicts": (saved({"model": {"w": torch.ones(2)}, "epoch": 3}), False),
        "optimizer state": (saved(optimizer.state_dict()), False),
        "empty dict": (saved({}), False),
    }


@pytest.fixture(scope="session")
def variants() -> dict[str, tuple[bytes, bool]]:
    return _variants()


@pytest.mark.parametrize("name,bulk", [
    ("state_dict.pt", True), ("plain_dict.pt", True), ("saved_on_cuda0.pt", True), ("full_module.pt", False),
    ("numpy_array.pt", False), ("custom_class.pt", False), ("scripted.pt", False), ("traced.pt", False)])
def test_real_files_bulk_equals_walk(model_dir, name, bulk, monkeypatch):
    assert assert_same(data_pkl(model_dir / name)) is bulk
    fast = read_model(model_dir / name).to_dict()  # the whole inspection, as `model inspect` prints it
    monkeypatch.setattr(torchrecords, "read", lambda *args: None)
    assert fast == read_model(model_dir / name).to_dict()


def test_legacy_file_is_walked(model_dir):
    assert torchrecords.read((model_dir / "legacy.pt").read_bytes(), "t", str) is None
    assert read_model(model_dir / "legacy.pt").tensors


def test_cuda0_storages_keep_their_device(model_dir):
    info = read_model(model_dir / "saved_on_cuda0.pt")
    assert info.devices == ["cuda:0"] and {t.device for t in info.tensors} == {"cuda:0"}


@pytest.mark.parametrize("name", [
    "shapes", "dtypes", "views and shared storages", "non-ASCII and long names", "a LONG shape",
    "one tensor (SETITEM)", "2,500 tensors (batches, LONG_BINPUT)", "requires_grad", "a LONG storage size",
    "a negative storage size", "two locations in turn", "a shape tuple fetched again", "state_dict() with _metadata",
    "the same tensor twice", "nn.Parameter",
    "nested dicts", "optimizer state", "empty dict"])
def test_variants_bulk_equals_walk(variants, name):
    data, bulk = variants[name]
    assert assert_same(data) is bulk


def test_variants_read_what_torch_holds(variants):
    data, _ = variants["shapes"]
    tensors = read_pickle(data, "t.pt").tensors
    assert [t.shape for t in tensors] == [(), (0,), (1,), (3, 4), (2, 3, 4), (1, 2, 3, 4), (1,) * 8, (300,), (70000,)]
    wide = read_pickle(variants["a LONG shape"][0], "t.pt")
    assert wide.tensors[0].shape == (2 ** 31 + 5,) and wide.storages == {"0": ("float32", 1, "cpu")}
    big = read_pickle(variants["a LONG storage size"][0], "t.pt")
    assert big.bulk and big.storages == {"0": ("float32", 2 ** 40, "cpu")} and big.tensors[0].nbytes == 2 ** 42
    views = read_pickle(variants["views and shared storages"][0], "t.pt")
    assert views.bulk and len(views.storages) == 1 and [t.shape for t in views.tensors] == [(20,), (15,), (2, 3), (10,)]
    places = read_pickle(variants["two locations in turn"][0], "t.pt")
    assert [t.device for t in places.tensors] == ["cpu", "cuda:1", "cpu", "cuda:1"] and places.bulk
    dtypes = read_pickle(variants["dtypes"][0], "t.pt")
    assert [t.dtype for t in dtypes.tensors] == ["bfloat16", "float16", "int8", "bool", "int64", "complex64", "uint8",
                                                 "float64", "int16", "int32"]


@pytest.mark.parametrize("name", ["views and shared storages", "state_dict() with _metadata"])
def test_every_one_byte_change_and_truncation_is_answered_as_the_walk_answers(variants, name):
    data, _ = variants[name]
    in_bulk = 0
    for i in range(len(data)):
        for value in {data[i] ^ 1, 0x71, 0x68, 0x72, 0x00}:
            in_bulk += assert_same(data[:i] + bytes([value]) + data[i + 1:])
        assert_same(data[:i])
    assert in_bulk > 100  # changes to names and sizes are still read in bulk: the test exercises both paths


def test_rest_of_pickle_fetching_a_record_walks_the_whole_pickle(variants):
    data, _ = variants["state_dict() with _metadata"]
    tail = data.rindex(b"h\x00")           # _metadata's OrderedDict fetches the global put first (memo 0)
    for index in (2, 5, 7):                # a name, a tuple, a persistent id: what the records withhold
        changed = data[:tail] + bytes([0x68, index]) + data[tail + 2:]
        assert assert_same(changed) is False
    overwrite = data[:tail] + b"h\x00q\x05" + data[tail + 2:]  # a PUT over a record's memo entry
    assert assert_same(overwrite) is False


@pytest.mark.parametrize("limit", ["MAX_OPCODES", "MAX_MEMO"])
def test_the_walks_limits_decide_and_refuse_the_same(variants, monkeypatch, limit):
    """With a limit the records pass (lowered here for a file of 2,500 tensors), the bulk read hands the
    pickle to the walk, which refuses it with its own message."""
    from rcompat.models.pickles import machine

    data, _ = variants["2,500 tensors (batches, LONG_BINPUT)"]
    value = {"MAX_OPCODES": 20_000, "MAX_MEMO": 10_000}[limit]  # the file: ~80,000 opcodes, ~20,000 memo entries
    monkeypatch.setattr(machine, limit, value)
    monkeypatch.setattr(torchrecords, limit, value)
    if limit == "MAX_OPCODES":
        monkeypatch.setattr(torchrecords, "_MAX_RECORDS", value // 25)
    fast, used = outcome(data, bulk=True)
    assert fast == outcome(data, bulk=False)[0] and not used
    assert fast[0] == "refused" and "refused as hostile" in fast[1]


@pytest.mark.gpu
def test_a_file_saved_from_real_gpu_tensors_reads_the_same_in_bulk(tmp_path):
    if not torch.cuda.is_available():
        pytest.skip("needs an NVIDIA GPU and driver (none here): the file must be saved from real cuda tensors")
    path = tmp_path / "on_gpu.pt"
    torch.save({"w": torch.ones(4, 4, device="cuda:0"), "h": torch.zeros(3, dtype=torch.bfloat16, device="cuda:0"),
                "cpu": torch.ones(2)}, path)
    assert assert_same(data_pkl(path)) is True
    info = read_model(path)
    assert info.devices == ["cpu", "cuda:0"] and [t.device for t in info.tensors] == ["cuda:0", "cuda:0", "cpu"]


def _t(*sizes: int) -> tuple:
    """A new tuple each time, as torch's tensor.size() is (a tuple literal is one object, which pickle
    would memoize and fetch again: "a shape tuple fetched again")."""
    return tuple(list(sizes))


def _runs_file() -> bytes:
    """Steady records interrupted by a new storage type, a new location and a key fetched again, a name
    holding bytes the steady pattern looks for, 2,100 records in three batches (runs cut at 1,000)."""
    float_storage = [_Storage(("storage", torch.FloatStorage, str(i), "cpu", 6)) for i in range(8)]
    state = {f"a{i}": _Tensor(float_storage[i], _t(2, 3), _t(3, 1)) for i in range(4)}
    state["long"] = _Tensor(_Storage(("storage", torch.LongStorage, "8", "cpu", 1)), _t(), _t())
    state["gpu"] = _Tensor(_Storage(("storage", torch.FloatStorage, "9", "cuda:1", 6)), _t(6), _t(1))
    state["tied"] = _Tensor(_Storage(("storage", torch.FloatStorage, float_storage[0].pid[2], "cpu", 6)), _t(6), _t(1))
    # ^ a new id, as torch's persistent_id makes, with the first one's key string: fetched from the memo
    state["q\x05h\x02((x"] = _Tensor(float_storage[5], _t(6), _t(1))   # a name that looks like a record's start
    state.update({f"b{i}": _Tensor(_Storage(("storage", torch.FloatStorage, str(10 + i), "cpu", i)), _t(i), _t(1))
                  for i in range(2100)})
    return torch_like(state)


def test_runs_of_steady_records_equal_the_walk_and_are_taken(monkeypatch):
    from rcompat.models import torchruns

    data = _runs_file()
    taken = []
    real = torchruns.run
    monkeypatch.setattr(torchrecords, "run", lambda *a: taken.append(real(*a)) or taken[-1])
    assert assert_same(data) is True
    read = read_pickle(data, "t.pt")
    assert [t.name for t in read.tensors][:9] == ["a0", "a1", "a2", "a3", "long", "gpu", "tied", "q\x05h\x02((x", "b0"]
    assert read.storages["8"] == ("int64", 1, "cpu") and read.storages["9"] == ("float32", 6, "cuda:1")
    assert len(read.tensors) == 2108 and len(taken) >= 4  # most records came in runs, not one by one
    assert sum(1 for end, _ in taken) and any(filled for _, filled in taken)


def test_every_one_byte_change_in_a_run_is_answered_as_the_walk_answers():
    state = {f"w{i}": _Tensor(_Storage(("storage", torch.FloatStorage, str(i), "cpu", 4)), _t(4), _t(1))
             for i in range(6)}
    state["h"] = _Tensor(_Storage(("storage", torch.HalfStorage, "6", "cpu", 2)), _t(2), _t(1))
    state.update({f"v{i}": _Tensor(_Storage(("storage", torch.FloatStorage, str(7 + i), "cpu", 1)), _t(1), _t(1))
                  for i in range(4)})
    data = torch_like(state)
    in_bulk = 0
    for i in range(len(data)):
        for value in {data[i] ^ 1, 0x71, 0x00}:
            in_bulk += assert_same(data[:i] + bytes([value]) + data[i + 1:])
    assert in_bulk > 50


def test_put_sequence_is_pickles_own_whatever_the_process_kept():
    """The PUT sequence is made once a process and kept: each check must still hold a file's PUTs to
    exactly what pickle writes, before and after a longer sequence is kept, and refuse the rest."""
    import pickletools

    dumped = pickle.dumps([[str(i)] for i in range(700)], protocol=2)   # lists and strings: memoized
    puts = [dumped[pos:pos + (2 if op.name == "BINPUT" else 5)]
            for op, _, pos in pickletools.genops(dumped) if op.name in ("BINPUT", "LONG_BINPUT")]
    assert len(puts) == 1401 and puts[300][:1] == b"r"
    for n in (1, 256, 257, 1400, 40, 300):    # short after long: the kept sequence's prefix
        packed = b"".join(puts[:n])
        assert torchrecords._in_sequence(packed)
        assert not torchrecords._in_sequence(packed[:-1])                   # a PUT cut short
        assert not torchrecords._in_sequence(packed + b"r")                 # a partial one after
        skipped = b"".join(puts[:n - 1] + puts[n:n + 1])                    # an index left out
        assert not torchrecords._in_sequence(skipped)
        assert not torchrecords._in_sequence(packed[:-1] + bytes([packed[-1] ^ 1]))


def _long_form_file(types_late: bool) -> bytes:
    """40 float records (past pickle's 256th memo index), then 200 float, int64 and 2-d records mixed (past
    the first two runs' windows, 9 KiB); with
    `types_late`, the int64 storage type is first memoized past index 256 (fetched by LONG_BINGET)."""
    def tensor(key, storage_type, *shape):
        numel = 1
        for n in shape:
            numel *= n
        stride = tuple(list(shape[1:]) + [1])
        return _Tensor(_Storage(("storage", storage_type, str(key), "cpu", numel)), _t(*shape), _t(*stride))

    state = {} if types_late else {"first": tensor(999, torch.LongStorage, 1)}
    state.update({f"w{i}": tensor(i, torch.FloatStorage, 4) for i in range(40)})
    state.update({f"m{i}": tensor(100 + i, (torch.FloatStorage, torch.LongStorage)[i % 2], 2, 3) if i % 3
                  else tensor(100 + i, torch.FloatStorage, 5) for i in range(200)})
    return torch_like(state)


@pytest.mark.parametrize("types_late", [False, True], ids=["types-memoized-early", "a-type-memoized-late"])
def test_runs_past_the_256th_memo_index_take_the_long_form_only_where_it_means_the_same(monkeypatch, types_late):
    """Past memo index 256 the runs use the pattern without the BINPUT and LONG_BINGET alternatives,
    unless a constant was memoized there (its fetches are LONG_BINGETs): either way what the walk reads,
    and in runs rather than one record at a time."""
    from rcompat.models import torchruns

    data = _long_form_file(types_late)
    used = []
    real = torchruns._pattern
    monkeypatch.setattr(torchruns, "_pattern", lambda st: used.append(real(st)) or used[-1])
    runs = []
    real_run = torchruns.run
    monkeypatch.setattr(torchrecords, "run", lambda *a: runs.append(real_run(*a)) or runs[-1])
    assert assert_same(data) is True
    long_form = [p for p in used if p is not torchruns.STEADY]
    assert (not long_form) if types_late else long_form
    assert len(runs) <= 8    # 241 records after the first, none read one by one


def test_every_one_byte_change_in_a_long_form_run_is_answered_as_the_walk_answers():
    data = _long_form_file(types_late=False)
    tail = len(data) - 200          # the last two records: the long form's run reads them (each case walks
                                    # the whole 20 KB pickle too, ~7 ms)
    in_bulk = 0
    for i in range(tail, len(data)):
        for value in {data[i] ^ 1, 0x71, 0x68}:   # a flipped bit, BINPUT, BINGET
            in_bulk += assert_same(data[:i] + bytes([value]) + data[i + 1:])
    assert in_bulk > 50


def test_a_record_with_ints_past_32_bits_inside_a_run_is_read_alone_as_the_walk_reads_it():
    """Runs take BININT1/2/BININT ints only (their patterns stay short to compile); a LONG1 size ends
    the run, and that record is read alone."""
    def tensor(key, *shape):
        return _Tensor(_Storage(("storage", torch.FloatStorage, str(key), "cpu", 4)), _t(*shape), _t(*([1] * len(shape))))

    state = {f"a{i}": tensor(i, 4) for i in range(12)}
    state["wide"] = tensor(12, 2 ** 31 + 5)
    state["wider"] = tensor(13, 3, 2 ** 40)
    state.update({f"b{i}": tensor(14 + i, 2, 2) for i in range(12)})
    data = torch_like(state)
    assert assert_same(data) is True
    shapes = {t.name: t.shape for t in read_pickle(data, "t.pt").tensors}
    assert shapes["wide"] == (2 ** 31 + 5,) and shapes["wider"] == (3, 2 ** 40) and shapes["b11"] == (2, 2)
