"""Where the symptom rows match a log, in one pass over it with memory independent of its size.

The log arrives in pieces (rcompat/explain/stream.py) and is searched a block at a time: a block of
about BLOCK characters plus AHEAD characters after it (a match starting in the block may run on) and
BEHIND before it (lookbehinds, and the literal windows below). Each match is counted once, by the block
its start lies in. Within a block only the text around each pattern's required literal is searched
(found at C speed), so a 10 MB log is searched in full only by patterns without such a literal; the
tables' patterns keep the linear-time subset of rcompat/data/patterns.py.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass, field
from typing import Iterable

from rcompat.explain.symptoms import Symptom, load_symptoms, placeholders

MAX_MATCHES_PER_SYMPTOM = 20
EXCERPT_CHARS = 300
WINDOW = 4200  # characters a match may reach either side of its required literal
MAX_WINDOWS = 10_000
BLOCK = 4 << 20
AHEAD = 16_384  # longest match: the tables bound each run to 4096 characters
BEHIND = WINDOW + 64


@dataclass
class Match:
    symptom: Symptom
    groups: dict[str, str]
    first_line: int  # 1-based line numbers of the matched text in the input
    last_line: int
    excerpt: str
    pattern_rank: int = 0
    notes: list[str] = field(default_factory=list)  # what --check found, folded into the finding
    status: "object | None" = None  # the status a class's vocabulary gives (a code error: warn)

    def overlaps(self, other: "Match") -> bool:
        return self.first_line <= other.last_line and other.first_line <= self.last_line

    def confirm_commands(self) -> list[str]:
        """The table's commands with captures filled in; one that needs an uncaptured group is dropped."""
        out = []
        for template in self.symptom.confirm:
            if all(self.groups.get(n) for n in placeholders(template)):
                out.append(template.format_map(self.groups))
        return out


@dataclass
class Scan:
    """What a pass over the input saw besides the matches."""
    chars: int = 0
    lines: int = 1


def find_matches(text: "str | Iterable[str]", symptoms: "Iterable[Symptom] | None" = None,
                 scan: "Scan | None" = None) -> list[Match]:
    """Every symptom occurrence in `text` (a string, or its pieces in order), in log order; a generic
    row hidden where a row that supersedes it, or any specific row (for a class), explains the same lines."""
    symptoms = list(symptoms) if symptoms is not None else load_symptoms()
    scan = scan if scan is not None else Scan()
    found: dict[str, list[Match]] = {s.id: [] for s in symptoms}
    seen: dict[str, set] = {s.id: set() for s in symptoms}
    automaton = literal_automaton(symptoms)
    for block in _blocks([text] if isinstance(text, str) else text, scan):
        present = _LiteralIndex(block.text, automaton)
        for symptom in symptoms:
            if len(found[symptom.id]) < MAX_MATCHES_PER_SYMPTOM:
                _symptom_matches(symptom, block, present, found[symptom.id], seen[symptom.id])
    matches = [m for ms in found.values() for m in ms]
    _demangle_symbols(matches)
    return sorted(_kept(matches), key=lambda m: (m.first_line, m.pattern_rank))


def _kept(matches: list[Match]) -> list[Match]:
    superseding = [m for m in matches if m.symptom.supersedes]
    specific = [m for m in matches if not m.symptom.generic]
    return [m for m in matches
            if not any(m.symptom.id in s.symptom.supersedes and m.overlaps(s) for s in superseding)
            and not (m.symptom.generic and any(m.overlaps(s) for s in specific))]


@dataclass
class _Block:
    text: str        # BEHIND context + the block + AHEAD look-ahead
    start: int       # where the block's own characters start in `text`
    end: int         # and end: a match is this block's when it starts in [start, end)
    line: int        # line number of text[0]
    line_starts: list[int]

    def line_of(self, offset: int) -> int:
        return self.line + bisect.bisect_right(self.line_starts, offset) - 1


def _blocks(pieces: Iterable[str], scan: Scan) -> Iterable[_Block]:
    """The input as overlapping blocks; only BLOCK + AHEAD + BEHIND characters (plus one piece) are held."""
    buf, line, accept_from, final = "", 1, 0, False
    it = iter(pieces)
    while not final:
        piece = next(it, None)
        final = piece is None
        if piece:
            buf += piece
            scan.chars += len(piece)
            scan.lines += piece.count("\n")
        if not final and len(buf) < BLOCK + AHEAD:
            continue
        end = len(buf) if final else len(buf) - AHEAD
        yield _Block(buf, accept_from, end, line, _line_starts(buf))
        cut = max(0, end - BEHIND)
        newline = buf.rfind("\n", max(0, cut - BEHIND), cut)
        cut = newline + 1 if newline >= 0 else cut  # keep whole lines where they are not endless
        line += buf.count("\n", 0, cut)
        buf, accept_from = buf[cut:], end - cut


class _LiteralIndex:
    """Where a pattern can match: windows around each occurrence of the literal every match contains.
    The case-sensitive literals of all rows are found in one pass (Aho-Corasick, pyahocorasick's C
    automaton) when it is installed, else each with str.find; (?i) ones in a lower-cased copy made once
    per block. A match reaches at most WINDOW characters either side of its literal (the tables bound
    their runs to 4096)."""

    def __init__(self, text: str, automaton=None):
        self.text, self._lower, self._automaton = text, None, automaton
        self._hits: "dict[str, list[int]] | None" = None
        self._windows: dict[tuple[str, bool], list[tuple[int, int]]] = {}

    def windows(self, literal: "str | None", ignore_case: bool) -> list[tuple[int, int]]:
        if literal is None:
            return [(0, len(self.text))]
        key = (literal, ignore_case)
        if key not in self._windows:
            if not ignore_case and self._automaton is not None:
                if self._hits is None:
                    self._hits = {}
                    for end, word in self._automaton.iter(self.text):
                        self._hits.setdefault(word, []).append(end - len(word) + 1)
                self._windows[key] = self._spans(self._hits.get(literal, ()), len(literal))
            else:
                self._windows[key] = self._spans(self._found(literal, ignore_case), len(literal))
        return self._windows[key]

    def _found(self, literal: str, ignore_case: bool):
        if ignore_case and self._lower is None:
            self._lower = self.text.lower()
        hay = self._lower if ignore_case else self.text
        at = hay.find(literal)
        while at >= 0:
            yield at
            at = hay.find(literal, at + max(1, WINDOW))  # the window around `at` covers what lies before

    def _spans(self, starts, length: int) -> list[tuple[int, int]]:
        spans: list[tuple[int, int]] = []
        size = len(self.text)
        for at in starts:
            start, end = max(0, at - WINDOW), min(size, at + length + WINDOW)
            if spans and start <= spans[-1][1]:
                spans[-1] = (spans[-1][0], max(end, spans[-1][1]))
            else:
                spans.append((start, end))
            if len(spans) > MAX_WINDOWS:
                return [(0, size)]  # dense: one linear scan of everything is cheaper
        return spans


def literal_automaton(symptoms: "list[Symptom]"):
    """The Aho-Corasick automaton of the rows' case-sensitive literals, or None without pyahocorasick."""
    try:
        import ahocorasick
    except ImportError:
        return None
    automaton = ahocorasick.Automaton()
    for s in symptoms:
        for pattern, literal in zip(s.patterns, s.literals or ()):
            if literal and not pattern.flags & re.IGNORECASE:
                automaton.add_word(literal, literal)
    if not len(automaton):
        return None
    automaton.make_automaton()
    return automaton


def _symptom_matches(symptom: Symptom, block: _Block, present: _LiteralIndex, found: list[Match],
                     seen_groups: set) -> None:
    """Add this block's matches of `symptom` to `found` (a more precise pattern first; one match per
    distinct set of captures)."""
    text = block.text
    literals = symptom.literals or (None,) * len(symptom.patterns)
    for rank, (pattern, literal) in enumerate(zip(symptom.patterns, literals)):
        spans = present.windows(literal, bool(pattern.flags & re.IGNORECASE))
        for m in (m for start, end in spans for m in pattern.finditer(text, start, end)):
            if not block.start <= m.start() < block.end:
                continue
            first = block.line_of(m.start())
            last = block.line_of(max(m.start(), m.end() - 1))
            candidate = Match(symptom, {k: v for k, v in m.groupdict().items() if v}, first, last,
                              _excerpt(block, m), rank)
            if any(candidate.overlaps(f) for f in found if f.pattern_rank < rank):
                continue  # a more precise pattern of this symptom already explains these lines
            key = tuple(sorted(candidate.groups.items()))
            if key in seen_groups:
                continue
            seen_groups.add(key)
            found.append(candidate)
            if len(found) >= MAX_MATCHES_PER_SYMPTOM:
                return


def _line_starts(text: str) -> list[int]:
    starts, at = [0], text.find("\n")
    while at >= 0:
        starts.append(at + 1)
        at = text.find("\n", at + 1)
    return starts


def _demangle_symbols(matches: list[Match]) -> None:
    """A captured C++ `symbol` also as `symbol_demangled`, for the texts (one demangler call for all)."""
    mangled = sorted({m.groups["symbol"] for m in matches if m.groups.get("symbol", "").startswith("_Z")})
    readable: dict[str, str] = {}
    if mangled:
        from rcompat.elf.read.demangle import demangle_all

        readable = dict(zip(mangled, demangle_all(mangled)))
    for m in matches:
        symbol = m.groups.get("symbol")
        if symbol in readable and readable[symbol] != symbol:
            m.groups["symbol_demangled"] = readable[symbol]
        if symbol:
            m.groups["symbol_readable"] = m.groups.get("symbol_demangled", symbol)


def _excerpt(block: _Block, m: re.Match) -> str:
    text = block.text
    start = text.rfind("\n", 0, m.start()) + 1
    end = text.find("\n", m.start())
    snippet = text[start:len(text) if end < 0 else end].strip()
    return snippet if len(snippet) <= EXCERPT_CHARS else snippet[:EXCERPT_CHARS] + "…"
