"""A pickle read as data (machine.py: the symbolic machine; values.py: the placeholders it builds and its
hostile-input limits). Importers use this package's names."""
from rcompat.models.pickles.machine import walk
from rcompat.models.pickles.values import (CHECK_EVERY, MAX_MARKS, MAX_MEMO, MAX_OPCODES, MAX_STACK, MAX_VISIT, Call,
                                           Dict, Global, Persistent, PickleFacts, Resume, Window)

__all__ = ["CHECK_EVERY", "MAX_MARKS", "MAX_MEMO", "MAX_OPCODES", "MAX_STACK", "MAX_VISIT", "Call", "Dict", "Global",
           "Persistent", "PickleFacts", "Resume", "Window", "walk"]
