"""What a name may hold, made safe for the reader of each format.

Names come from the machine and from the inputs users hand rcompat (tar member names, paths,
symbols): any byte is possible. Bytes that are not UTF-8 reach rcompat as lone surrogates
(os.fsdecode's surrogateescape); they are shown as `\\xNN`, the byte they stand for. Control characters
are shown as Python escapes (`\\n`, `\\x1b`), so a name cannot split a line, move the cursor or end an
XML document.
"""
from __future__ import annotations

import re


def escape_undecodable(text: str) -> str:
    """rcompat.model.escape_undecodable, imported when first needed: `elf symbols` escapes its output
    and must not pay for the report model (dataclasses) it never uses."""
    from rcompat.model import escape_undecodable as escape

    return escape(text)

# C0 controls (but tab), DEL and C1 controls; newline is kept where a text's lines are meant.
# Patterns, compiled by re (and kept in its cache) when first used: compiling the three at import was
# most of this module's ~0.8 ms, paid by `elf symbols`, whose plain output never needs them.
_CONTROL = "[\x00-\x08\x0b-\x1f\x7f-\x9f]"
_CONTROL_OR_NEWLINE = "[\x00-\x08\x0a-\x1f\x7f-\x9f]"
# Characters XML 1.0 cannot hold at all, even as character references.
_NOT_XML = "[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]"
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape_char(match: re.Match) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"


def one_line(text: object) -> str:
    """`text` as one printable line: newlines and every other control character escaped."""
    return re.sub(_CONTROL_OR_NEWLINE, _escape_char, escape_undecodable(str(text)))


# Bytes that need no escape in ASCII text where lines are kept: tab, newline, space to '~'.
_SAFE_ASCII_LINES = bytes([9, 10, *range(0x20, 0x7f)])


def printable(text: object) -> str:
    """`text` with its lines kept and every other control character escaped. ASCII text without a
    control character (nm's listing of libtorch_cpu.so, 6.6 MB) is checked in C and returned as is:
    the regex and the surrogate check took 0.4 s of a command meant to run within 2x `nm -D`."""
    text = str(text)
    if text.isascii():
        if not text.encode("ascii").translate(None, _SAFE_ASCII_LINES):
            return text
        return re.sub(_CONTROL, _escape_char, text)
    return re.sub(_CONTROL, _escape_char, escape_undecodable(text))


def plain_ascii(text: str) -> bytes | None:
    """`text` as ASCII bytes when printable() would return it unchanged (ASCII, no control character
    but tab and newline), else None: what a large listing writes to a binary stream without the text
    layer encoding it a second time."""
    if text.isascii():
        data = text.encode("ascii")
        if not data.translate(None, _SAFE_ASCII_LINES):
            return data
    return None


def xml_text(text: object) -> str:
    """`text` as XML 1.0 can hold it (ElementTree escapes <, & and quotes; these it cannot)."""
    return re.sub(_NOT_XML, _escape_char, escape_undecodable(str(text)))
