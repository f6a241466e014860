"""`rcompat explain`: place a pasted error text or a whole log: its cause, the command that confirms it,
the remedy.

By layer, bottom to top: `stream` (the input, read in pieces and decoded), `symptoms` (the rows of
rcompat/data/symptoms.toml and the structural classes of explain_classes.toml), `vocabulary` (the
soname, symbol-family and error-code tables), `matching` (where rows match, in one bounded pass),
`classes` (a class's captures looked up in the vocabulary), `confirm` (`--check`: the probes that
confirm a finding on this machine), `report` (findings), `corpus` (the development / held-out split and
its rates), `cli` (argparse only).
"""
from __future__ import annotations

from rcompat.exports import lazy_exports

__getattr__, __dir__ = lazy_exports(__name__, {
    "explain": "rcompat.explain.report:explain",
    "find_matches": "rcompat.explain.matching:find_matches",
    "load_symptoms": "rcompat.explain.symptoms:load_symptoms",
    "fill": "rcompat.explain.symptoms:fill",
    "symptom_list": "rcompat.explain.symptoms:symptom_list",
    "read_text": "rcompat.explain.stream:read_text",
})
