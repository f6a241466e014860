"""The fast opcode walker (rcompat/models/pickles.py) against pickle itself: every protocol, every
opcode family a plain-data pickle uses, and the refusals of malformed or hostile bytes."""
from __future__ import annotations

import collections
import pickle
import struct

import pytest

from rcompat.models.errors import ModelFileError
from rcompat.models.pickles import MAX_MARKS, Call, Dict, Global, Persistent, Window, walk

DATA = {
    "ints": [0, 1, -1, 255, 256, 65535, 65536, -2**31, 2**31 - 1, 2**31, 2**63, -2**200, True, False],
    "floats": [0.0, -1.5, 1e300, float("inf")],
    "text": ["", "a", "é\u20ac\U0001f600", "x" * 300, "line\nbreak", "quote'\"s"],
    "bytes": [b"", b"\x00\xff", b"y" * 300],
    "nested": ({"k": (1, 2, 3)}, [[], [()], (None,)], (1, 2), (1,)),
    7: "int key", ("t", 1): "tuple key",
}
SHARED = [1, 2]
DATA["shared"] = [SHARED, SHARED]  # memo: PUT then GET of the same list


def as_python(value):
    """The walker's placeholders back to plain data (what pickle.loads builds for plain data)."""
    if isinstance(value, Dict):
        return {as_python(k): as_python(v) for k, v in value}
    if isinstance(value, list):
        return [as_python(v) for v in value]
    if isinstance(value, tuple):
        return tuple(as_python(v) for v in value)
    return value


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_plain_data_walks_to_what_pickle_loads(protocol):
    data = {k: v for k, v in DATA.items() if protocol >= 3 or k != "bytes"}  # below 3, bytes pickle as a call
    blob = pickle.dumps(data, protocol=protocol)
    facts = walk(Window(blob), "test")
    assert as_python(facts.root) == pickle.loads(blob)
    assert facts.end == len(blob) and facts.globals == ([] if protocol >= 2 else facts.globals)


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_classes_become_calls_and_globals_never_imported(protocol):
    blob = pickle.dumps(collections.OrderedDict(a=collections.Counter("ab")), protocol=protocol)
    facts = walk(Window(blob), "test")
    assert "collections.OrderedDict" in facts.globals and "collections.Counter" in facts.globals
    assert isinstance(facts.root, Call) and facts.root.func == Global("collections", "OrderedDict")


def test_persistent_ids_and_several_pickles_in_a_row():
    class P(pickle.Pickler):
        def persistent_id(self, obj):
            return ("storage", "key0") if obj == "tensor" else None

    import io

    buf = io.BytesIO()
    P(buf, protocol=2).dump({"w": "tensor"})
    pickle.dump([1, 2], buf, protocol=2)
    data = buf.getvalue()
    window = Window(data)
    first = walk(window, "first")
    [(key, value)] = first.root
    assert first.persistent_ids == [("storage", "key0")] and key == "w"
    assert isinstance(value, Persistent) and value.pid == ("storage", "key0")
    assert as_python(walk(window, "second").root) == [1, 2] and window.pos == len(data)


@pytest.mark.parametrize("blob,needle", [
    (b"\x80\x02X" + struct.pack("<I", 1 << 31) + b"abc.", "runs past the end"),   # length claiming 2 GiB
    (b"\x80\x02]q\x00", "truncated"),                                             # no STOP
    (b"\x80\x02\xffN.", "not a pickle opcode"),                                   # an opcode that does not exist
    (b"\x80\x02h\x05.", "KeyError"),                                               # memo read before written
    (b"\x80\x02t.", "IndexError"),                                                 # TUPLE without MARK
    (b"\x80\x02" + b"(" * (MAX_MARKS + 1), f"{MAX_MARKS:,} deep"),
])
def test_malformed_and_hostile_bytes_are_refused(blob, needle):
    with pytest.raises(ModelFileError) as err:
        walk(Window(blob), "bad.pkl")
    assert needle in str(err.value) and str(err.value).startswith("bad.pkl")


def test_window_end_is_respected():
    blob = pickle.dumps("abcdef", protocol=2)
    with pytest.raises(ModelFileError, match="truncated|past the end"):
        walk(Window(blob, 0, len(blob) - 3), "cut")
