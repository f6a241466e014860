"""`rcompat elf symbols` output: nm text byte for byte, the streamed JSON against the library rows, and
the lean start-up of the command (what it imports)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from rcompat.elf import symbols
from rcompat.elf.read.symbol_text import json_interiors

FIXTURES = ["versioned", "needs_version", "versioned_old", "needs_b", "user", "interpose_b"]


def nm_stdout(*args: str) -> str:
    """nm's output in the C locale, whose byte order rcompat's listing follows (nm sorts with strcoll:
    under en_US.UTF-8 case and underscores sort otherwise)."""
    env = {**os.environ, "LC_ALL": "C"}
    return subprocess.run(["nm", *args], capture_output=True, text=True, check=True, env=env).stdout


@pytest.mark.parametrize("name", FIXTURES)
@pytest.mark.parametrize("which", [[], ["--defined"], ["--undefined"]])
def test_cli_text_is_nm_output_byte_for_byte(cli, libs, name, which):
    path = str(libs[name])
    proc = cli("elf", "symbols", *which, path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == nm_stdout("-D", *[w + "-only" for w in which], path)


def test_cli_text_on_libtorch_cpu_is_nm_output_byte_for_byte(cli, torch_lib):
    path = str(torch_lib / "libtorch_cpu.so")
    assert cli("elf", "symbols", "--defined", path).stdout == nm_stdout("-D", "--defined-only", path)


def test_demangled_text_is_nm_C_output_byte_for_byte(cli, torch_lib):
    path = str(torch_lib / "libc10.so")
    assert cli("elf", "symbols", "-C", "--undefined", path).stdout == nm_stdout("-D", "-C", "--undefined-only", path)
    assert cli("elf", "symbols", "-C", path).stdout == nm_stdout("-D", "-C", path)


@pytest.mark.parametrize("name", FIXTURES)
@pytest.mark.parametrize("defined", [None, True, False])
def test_json_lines_are_the_library_records_compactly(libs, name, defined):
    syms = symbols(libs[name], defined=defined, demangle=True)
    for demangle in (False, True):
        text = "".join(syms.json_chunks(demangle=demangle))
        records = syms.to_records(demangle=demangle)
        assert json.loads(text) == records
        lines = text.splitlines()
        assert lines[0] == "[" and lines[-1] == "]"
        expected = [json.dumps(r, separators=(",", ":")) for r in records]
        assert [line.rstrip(",") for line in lines[1:-1]] == expected  # one object per line


def test_cli_json_parses_to_the_same_rows_as_the_library(cli, libs):
    path = libs["needs_version"]
    proc = cli("elf", "symbols", "-f", "json", "-C", str(path))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == symbols(path, demangle=True).to_records(demangle=True)


def test_cli_json_on_libtorch_cpu_has_every_defined_symbol(cli, torch_lib):
    path = str(torch_lib / "libtorch_cpu.so")
    proc = cli("elf", "symbols", "--defined", "--format", "json", path)
    rows = json.loads(proc.stdout)
    reference = [line for line in nm_stdout("-D", "--defined-only", path).splitlines() if line]
    assert len(rows) == len(reference) > 70000
    assert sorted(f"{r['value']:016x} {r['letter']} {r['decorated']}" for r in rows) == sorted(reference)
    assert proc.stdout.count("\n") == len(rows) + 2  # "[", one line per symbol, "]"


def test_json_escapes_only_names_that_need_it():
    names = ["plain_name", 'quo"te', "back\\slash", "tab\there", "caf\u00e9", "del\x7f"]
    assert json_interiors(names) == [json.dumps(n)[1:-1] for n in names]
    plain = ["a", "_ZN2at6native3addEv", "x@y"]
    assert json_interiors(plain) is plain


def test_empty_selection_gives_empty_outputs(lib32):
    syms = symbols(lib32, defined=False)
    assert len(syms) == 0
    assert syms.nm_text() == "" and "".join(syms.json_chunks()) == "[]\n" and json.loads("[]\n") == []


def test_elf_symbols_command_imports_no_heavy_or_unrelated_module(libs):
    """The path to `rcompat elf symbols` must stay lean: no numpy/pandas/torch/rpy2, nor the modules of
    other commands, the report model, or pyelftools (the headers are read with struct)."""
    # The modules are listed at exit (an atexit callback, which also keeps the command from ending the
    # process before it: rcompat.cli.common.exit_if_asked).
    code = ("import atexit, runpy, sys\n"
            "atexit.register(lambda: sys.stderr.write(' '.join(sorted(sys.modules))))\n"
            "sys.argv = ['rcompat', 'elf', 'symbols', '--defined', '-f', 'json', sys.argv[1]]\n"
            "runpy.run_module('rcompat', run_name='__main__')\n")
    proc = subprocess.run([sys.executable, "-c", code, str(libs["versioned"])], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)  # the command really ran
    loaded = set(proc.stderr.split())
    assert "rcompat.elf.read.symbol_text" in loaded
    unwanted = {"numpy", "pandas", "torch", "rpy2", "elftools", "rcompat.model", "rcompat.areas", "rcompat.r",
                "rcompat.cuda", "rcompat.race", "rcompat.tools", "dataclasses"}
    assert loaded & unwanted == set()


@pytest.mark.parametrize("stt", [3, 4])  # STT_SECTION, STT_FILE
def test_section_and_file_symbols_are_left_out_like_nm(cli, libs, tmp_path, stt):
    """A .dynsym holding a section or file symbol (older linkers wrote them): nm -D leaves it out."""
    from rcompat.elf.read.reader import ElfImage

    data = bytearray(libs["versioned"].read_bytes())
    with ElfImage(libs["versioned"]) as img:
        dynsym = img.section_by_type("SHT_DYNSYM")
        names = img.raw_dynamic_symbols.names
        shndx = img.raw_dynamic_symbols.shndx
    row = next(i for i, (n, s) in enumerate(zip(names, shndx)) if n == "plain" and s)
    info_at = dynsym.offset + (row + 1) * 24 + 4
    data[info_at] = (data[info_at] & 0xF0) | stt
    patched = tmp_path / "libpatched.so"
    patched.write_bytes(bytes(data))
    for which in ([], ["--defined"], ["--undefined"]):
        out = cli("elf", "symbols", *which, str(patched)).stdout
        assert out == nm_stdout("-D", *[w + "-only" for w in which], str(patched))
    assert "plain" not in {s.name for s in symbols(patched)}
    assert len(json.loads("".join(symbols(patched, defined=True).json_chunks()))) == len(symbols(patched, defined=True))


def test_elf_symbols_run_as_the_program_ends_without_the_interpreter_teardown(libs, capsys):
    """`elf symbols` asks to end without freeing its listing (rcompat.cli.common.end_without_teardown):
    run as the program, the process ends right after main() with the whole listing written and exit 0;
    with an atexit callback registered the interpreter ends as usual and the callback runs; called
    in-process with its arguments, main() returns and keeps nothing."""
    from rcompat.cli import common
    from rcompat.cli.main import main

    path = str(libs["versioned"])
    expected = nm_stdout("-D", path)
    program = ("import sys\n"
               "sys.argv = ['rcompat', 'elf', 'symbols', sys.argv[1]]\n"
               "from rcompat.cli.main import main\n"
               "code = main()\n"
               "sys.stderr.write(f'main returned {code}')\n")
    ended = subprocess.run([sys.executable, "-c", program, path], capture_output=True, text=True)
    assert (ended.returncode, ended.stdout, ended.stderr) == (0, expected, "")
    with_atexit = "import atexit, sys\natexit.register(sys.stderr.write, ' then atexit')\n" + program
    usual = subprocess.run([sys.executable, "-c", with_atexit, path], capture_output=True, text=True)
    assert (usual.returncode, usual.stdout, usual.stderr) == (0, expected, "main returned 0 then atexit")
    assert main(["elf", "symbols", path]) == 0
    assert capsys.readouterr().out == expected
    assert common._KEPT_UNTIL_EXIT == []


def test_control_characters_in_symbol_names_are_escaped_and_the_rest_is_nm_output(cli, gcc, tmp_path):
    """A name holding ESC is printed with `\\x1b` in its place (the text is written as bytes only when
    it needs no escape); a UTF-8 name and the sort order are nm's."""
    raw_names = [b"red\x1b[31mname", b"caf\xc3\xa9", b"plain"]
    asm = b".section .note.GNU-stack,\"\",@progbits\n.text\n"
    asm += b"".join(b'.globl "%s"\n"%s":\n ret\n' % (name, name) for name in raw_names)
    (tmp_path / "hostile.s").write_bytes(asm)
    lib = tmp_path / "libhostile.so"
    subprocess.run([gcc, "-shared", "-fPIC", "-o", str(lib), str(tmp_path / "hostile.s")], check=True, timeout=60)
    proc = cli("elf", "symbols", "--defined", str(lib))
    assert proc.returncode == 0, proc.stderr
    assert "\x1b" not in proc.stdout and "T red\\x1b[31mname\n" in proc.stdout
    assert proc.stdout == nm_stdout("-D", "--defined-only", str(lib)).replace("\x1b", "\\x1b")
