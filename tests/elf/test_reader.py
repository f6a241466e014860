"""The struct-based ELF and section header reader against pyelftools, the independent oracle."""
from __future__ import annotations

from pathlib import Path

import pytest
from elftools.elf.elffile import ELFFile

from rcompat.elf import ElfError
from rcompat.elf.read.reader import ElfImage

SYSTEM_LIBS = ("/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
               "/usr/lib/R/lib/libR.so", "/usr/local/cuda-13.0/lib64/libcudart.so.13")


def pyelftools_view(path: Path) -> tuple[dict, list[tuple]]:
    with open(path, "rb") as fh:
        elf = ELFFile(fh)
        h = elf.header
        header = {"e_type": h["e_type"], "e_machine": h["e_machine"], "entry": h["e_entry"], "shoff": h["e_shoff"],
                  "phoff": h["e_phoff"], "phnum": h["e_phnum"], "phentsize": h["e_phentsize"]}
        sections = []
        for i, s in enumerate(elf.iter_sections()):
            typ = s["sh_type"]
            sections.append((i, s.name, typ if isinstance(typ, str) else f"SHT_{typ:#x}", s["sh_addr"], s["sh_offset"],
                             s["sh_size"], s["sh_flags"], s["sh_entsize"], s["sh_link"], s["sh_info"]))
    return header, sections


def ours(path: Path) -> tuple[dict, list[tuple]]:
    from elftools.elf import enums

    with ElfImage(path) as img:
        names = {"e_type": {v: k for k, v in enums.ENUM_E_TYPE.items() if isinstance(v, int)},
                 "e_machine": {v: k for k, v in enums.ENUM_E_MACHINE.items() if isinstance(v, int)}}
        header = {"e_type": names["e_type"][img.e_type], "e_machine": names["e_machine"][img.e_machine],
                  "entry": img.entry, "shoff": img.shoff, "phoff": img.phoff, "phnum": img.phnum,
                  "phentsize": img.phentsize}
        sections = [(s.index, s.name, s.type, s.addr, s.offset, s.size, s.flags, s.entsize, s.link, s.info)
                    for s in img.sections]
    return header, sections


@pytest.mark.parametrize("name", ["versioned", "needs_version", "user", "interpose_b"])
def test_headers_and_sections_equal_pyelftools_on_fixtures(libs, name):
    assert ours(libs[name]) == pyelftools_view(libs[name])


def test_32_bit_headers_and_sections_equal_pyelftools(lib32):
    assert ours(lib32) == pyelftools_view(lib32)


@pytest.mark.parametrize("name", ["libtorch_cpu.so", "libc10.so", "libgomp.so.1"])
def test_headers_and_sections_equal_pyelftools_on_torch(torch_lib, name):
    assert ours(torch_lib / name) == pyelftools_view(torch_lib / name)


@pytest.mark.parametrize("path", SYSTEM_LIBS)
def test_headers_and_sections_equal_pyelftools_on_system_libraries(path):
    if not Path(path).exists():
        pytest.skip(f"{path} is not installed here")
    assert ours(Path(path)) == pyelftools_view(Path(path))


def test_extended_section_numbering_is_read_from_section_zero(libs, tmp_path):
    """e_shnum 0 and e_shstrndx SHN_XINDEX move the real values into section 0 (sh_size, sh_link)."""
    import struct

    data = bytearray(libs["versioned"].read_bytes())
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shnum, shstrndx = struct.unpack_from("<HH", data, 0x3C)
    struct.pack_into("<HH", data, 0x3C, 0, 0xFFFF)
    struct.pack_into("<Q", data, shoff + 0x20, shnum)  # section 0's sh_size
    struct.pack_into("<I", data, shoff + 0x28, shstrndx)  # section 0's sh_link
    moved = tmp_path / "extended.so"
    moved.write_bytes(bytes(data))
    with ElfImage(libs["versioned"]) as a, ElfImage(moved) as b:
        assert [s.name for s in b.sections] == [s.name for s in a.sections] and len(b.sections) == shnum
        assert b.dynamic_symbols.names == a.dynamic_symbols.names


def test_a_section_name_table_index_beyond_the_table_is_an_elf_error(libs, tmp_path):
    import struct

    data = bytearray(libs["versioned"].read_bytes())
    shnum, = struct.unpack_from("<H", data, 0x3C)
    struct.pack_into("<H", data, 0x3E, shnum + 3)
    bad = tmp_path / "bad.so"
    bad.write_bytes(bytes(data))
    with ElfImage(bad) as img, pytest.raises(ElfError, match="section name table"):
        img.sections


def test_zero_u16_positions_finds_aligned_zero_entries_only():
    """The undefined rows' search over packed st_shndx: a 0x00 0x00 pair straddling two entries (a
    section index ending in 0x00 after one starting with it, as from the 257th section on) is no match."""
    from array import array

    from rcompat.elf.read.symbol_columns import positions, zero_u16_positions

    values = [5, 0x0300, 0, 0, 7, 0x0100, 0x0001, 0]
    packed = array("H", values).tobytes()
    assert zero_u16_positions(packed) == positions(values, 0) == [2, 3, 7]
    assert zero_u16_positions(b"") == [] and zero_u16_positions(array("H", [0]).tobytes()) == [0]


def test_columns_of_a_file_in_the_other_byte_order_match_the_packed_ones(libs):
    """SymbolColumns decodes a .dynsym in the other byte order with struct: every column, the name
    offsets and the undefined rows come out as the packed (strided-view) reading gives them."""
    import struct
    import sys

    from rcompat.elf.read.format import RawSymbols

    if sys.byteorder != "little":
        pytest.skip("the fixtures are little-endian: on this machine they are the other byte order")
    from rcompat.elf.read.symbol_columns import SymbolColumns

    with ElfImage(libs["versioned"]) as img:
        dynsym = img.section_by_type("SHT_DYNSYM")
        entries = bytes(img.data[dynsym.offset + 24:dynsym.offset + dynsym.size])
    count = len(entries) // 24
    versym = struct.pack(f"<{count}H", *range(count))
    swapped = b"".join(struct.pack(">IBBHQQ", *fields) for fields in struct.iter_unpack("<IBBHQQ", entries))
    native = SymbolColumns(entries, 64, "<", versym)
    other = SymbolColumns(swapped, 64, ">", struct.pack(f">{count}H", *range(count)))
    for name in ("st_names", "infos", "others", "shndx", "values", "sizes", "versym"):
        assert list(other.column(name)) == list(native.column(name)), name
    assert list(other.column("keys")) == list(native.column("keys"))
    assert list(other.name_offsets()) == list(native.name_offsets()) == native.column("st_names")
    assert other.field_bytes("shndx") is None and native.field_bytes("shndx") is not None
    undefined = [i for i, ndx in enumerate(native.column("shndx")) if ndx == 0]
    assert undefined, "the fixture has undefined symbols"
    assert RawSymbols([""] * count, source=native).undefined_rows() == undefined
    assert RawSymbols([""] * count, source=other).undefined_rows() == undefined
