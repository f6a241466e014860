"""Split demangled C++ names into top-level namespace and enclosing class/namespace scope, so ABI
changes can be grouped the way a reader thinks of libtorch (`at::native`, `c10::impl`, `torch::jit`).
Demangling itself is rcompat.elf.read.demangle's."""
from __future__ import annotations

_SPECIAL_PREFIXES = ("construction vtable for ", "typeinfo name for ", "typeinfo for ", "vtable for ",
                     "VTT for ", "guard variable for ", "non-virtual thunk to ", "virtual thunk to ",
                     "covariant return thunk to ", "reference temporary #", "TLS init function for ",
                     "TLS wrapper function for ", "transaction clone for ")
_ANON = "(anonymous namespace)"


def scope_of(demangled: str) -> tuple[str, str]:
    """(top-level namespace, enclosing scope) of a demangled name.

    `c10::impl::FakeTensorModeTLS::activate()` → ("c10", "c10::impl::FakeTensorModeTLS");
    `vtable for at::Tensor` → ("at", "at::Tensor"); a C name → ("", "").
    """
    text, special = demangled, False
    for prefix in _SPECIAL_PREFIXES:
        if text.startswith(prefix):
            text, special = text[len(prefix):], True
            if prefix.startswith("construction vtable"):
                text = text.split("-in-", 1)[0]
            break
    parts = [p.replace("\x00", _ANON) for p in _qualified_parts(text.replace(_ANON, "\x00"))]
    # A special member (vtable for X, typeinfo for X) belongs to X itself; a function to its scope.
    scope_parts = parts if special else parts[:-1]
    if not scope_parts:
        return "", ""
    return scope_parts[0], "::".join(scope_parts)


def _qualified_parts(text: str) -> list[str]:
    """Split the entity name at top-level `::`, ignoring template arguments, the parameter list and
    a leading return type (template functions carry one: `at::Tensor at::native::f<float>(…)`)."""
    depth, i, head_end, name_start = 0, 0, len(text), 0
    while i < len(text):
        if depth == 0 and text.startswith("operator", i):
            i = _skip_operator(text, i + len("operator"))
            continue
        ch = text[i]
        if ch == "(" and depth == 0:
            head_end = i
            break
        if ch in "<(":
            depth += 1
        elif ch in ">)" and depth:
            depth -= 1
        elif ch == " " and depth == 0 and text[i + 1:i + 2] not in ("", "*", "&", "["):
            name_start = i + 1  # what came before was a return type
        i += 1
    head = text[name_start:head_end]
    parts, current, depth = [], [], 0
    j = 0
    while j < len(head):
        ch = head[j]
        if depth == 0 and head.startswith("operator", j):
            end = _skip_operator(head, j + len("operator"))
            current.append(head[j:end])
            j = end
            continue
        if ch in "<(":
            depth += 1
        elif ch in ">)" and depth:
            depth -= 1
        elif depth == 0 and head.startswith("::", j):
            parts.append("".join(current).strip())
            current, j = [], j + 2
            continue
        current.append(ch)
        j += 1
    parts.append("".join(current).strip())
    return [p for p in parts if p]


def _skip_operator(text: str, i: int) -> int:
    """Index just past an operator's symbol (`<<=`, `()`, `[]`, ` new[]`, ` bool`)."""
    if text.startswith("()", i) or text.startswith("[]", i):
        return i + 2
    j = i
    while j < len(text) and text[j] in "<>=!+-*/%^&|~,[]":
        j += 1
    if j > i:
        return j
    while j < len(text) and text[j] not in "(<":  # named operators: new, delete, conversions
        j += 1
    return j
