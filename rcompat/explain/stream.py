"""explain's input: a file, stdin or arguments, read in pieces so memory does not grow with the log.

A 250 MB log is read 1 MiB at a time and decoded incrementally; the matcher keeps a bounded window of
it (rcompat/explain/matching.py). Files and stdin share the `log` size limit (rcompat/inputs.py): a
file over it is refused before it is read, stdin once more than the limit has come through.

Decoding: a byte-order mark picks UTF-8, UTF-16 or UTF-32 (PowerShell's `>` writes UTF-16 LE with a
BOM); UTF-16 without a BOM is recognised by its zero bytes; everything else is UTF-8 with undecodable
bytes replaced. Terminal colour codes (Jupyter's and IPython's tracebacks, R's crayon/cli) and the CR of
CRLF line ends are removed, so a pattern never has to allow for them; line numbers stay those of the file.
"""
from __future__ import annotations

import codecs
import re
import sys
from typing import BinaryIO, Iterable, Iterator

from rcompat.errors import UsageError

READ_BYTES = 1 << 20
_ANSI = re.compile(r"\x1b\[[0-9;?]{0,32}[ -/]{0,4}[@-~]|\x1b\][^\x07\x1b]{0,256}(?:\x07|\x1b\\)")
_BOMS = ((codecs.BOM_UTF32_LE, "utf-32-le"), (codecs.BOM_UTF32_BE, "utf-32-be"), (codecs.BOM_UTF8, "utf-8"),
         (codecs.BOM_UTF16_LE, "utf-16-le"), (codecs.BOM_UTF16_BE, "utf-16-be"))


def clean(text: str) -> str:
    """`text` without terminal escape sequences and CRs of CRLF; the number of lines is unchanged."""
    if "\x1b" in text:
        text = _ANSI.sub("", text)
    return text.replace("\r\n", "\n") if "\r" in text else text


def sniff_encoding(head: bytes) -> tuple[str, int]:
    """(codec, bytes of BOM to skip) for a log starting with `head`."""
    for bom, codec in _BOMS:
        if head.startswith(bom):
            return codec, len(bom)
    sample = head[:4096]
    if len(sample) >= 4:
        odd_zeros = sample[1::2].count(0) / (len(sample) // 2)
        even_zeros = sample[0::2].count(0) / ((len(sample) + 1) // 2)
        if odd_zeros > 0.4 and even_zeros < 0.05:
            return "utf-16-le", 0
        if even_zeros > 0.4 and odd_zeros < 0.05:
            return "utf-16-be", 0
    return "utf-8", 0


def decoded_pieces(fh: BinaryIO, limit: int, name: str) -> Iterator[str]:
    """The text of `fh`, cleaned, in pieces that end at a line end (the last may not); UsageError once
    more than `limit` bytes came (stdin has no size to check before reading)."""
    head = fh.read(min(READ_BYTES, limit + 1))
    codec, skip = sniff_encoding(head)
    decoder = codecs.getincrementaldecoder(codec)(errors="replace")
    seen, carry, data = len(head), "", head[skip:]
    while True:
        if seen > limit:
            from rcompat.inputs import size_problem

            raise UsageError(f"cannot read log {name}: {size_problem(seen, 'log')}")
        final = not data
        text = carry + decoder.decode(data, final=final)
        cut = text.rfind("\n") + 1
        if final or (not cut and len(text) > 4 * READ_BYTES):  # one endless line: pass it on anyway
            cut = len(text)
        carry = text[cut:]
        if cut:
            yield clean(text[:cut])
        if final:
            return
        data = fh.read(READ_BYTES)
        seen += len(data)


def input_pieces(texts: "list[str] | None", from_file: "str | None", stdin: "BinaryIO | None" = None) -> Iterator[str]:
    """The error text from --from-file (a file or '-'), then the arguments ('-' reads stdin), in pieces.
    Stdin is read once even when named twice."""
    from rcompat.inputs import limit_bytes, open_input

    limit = limit_bytes("log")
    stdin_used = False
    sources: list[str] = ([from_file] if from_file else []) + list(texts or [])
    for i, source in enumerate(sources):
        if i:
            yield "\n"
        is_file = from_file is not None and i == 0
        if source == "-":
            if stdin_used:
                continue
            stdin_used = True
            yield from decoded_pieces(stdin or sys.stdin.buffer, limit, "from stdin")
        elif is_file:
            fh = open_input(source, "log", "log")
            with fh:
                yield from decoded_pieces(fh, limit, source)
        else:
            yield clean(source)


class Guarded:
    """An iterable of pieces that remembers whether any of them held more than white space, so the CLI
    can refuse an empty input (exit 2) after streaming it, without keeping it."""

    def __init__(self, pieces: Iterable[str]):
        self._pieces, self.blank = pieces, True

    def __iter__(self) -> Iterator[str]:
        for piece in self._pieces:
            if self.blank and piece.strip():
                self.blank = False
            yield piece


def read_text(texts: "list[str] | None", from_file: "str | None", stdin: "BinaryIO | None" = None) -> str:
    """The whole error text (for callers that need one string: the R front door, tests); empty input is
    a usage error. `stdin` is a binary stream (default: this process's)."""
    text = "".join(input_pieces(texts, from_file, stdin))
    if not text.strip():
        raise UsageError("no error text given: pass it as an argument, with --from-file FILE, or '-' for stdin")
    return text
