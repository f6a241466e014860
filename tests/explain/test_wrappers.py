"""Wrappers do not hide the cause: every corpus text, put mechanically inside what users paste around
it (R's package-load failure, a Python traceback, a Jupyter console with colours and CRLF, an RStudio
console, a conda prefix on its paths, other version numbers, another library name), is placed like the
original: every symptom the original gets, the wrapped text gets too, and what is added is only the
wrapper's own row (r-package-load-failed) or a structural class."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from rcompat.explain import explain, load_symptoms
from rcompat.explain.corpus import load_cases

SYMPTOMS = load_symptoms()
CLASSES = {s.id for s in SYMPTOMS if s.generic}
CASES = load_cases("corpus") + load_cases("new")


def r_package_load(text: str) -> str:
    body = "\n".join("  " + line for line in text.strip().splitlines())
    return ("> library(torch)\nError: package or namespace load failed for ‘torch’:\n"
            " .onLoad failed in loadNamespace() for 'torch', details:\n  call: fun(libname, pkgname)\n"
            f"  error: {body.lstrip()}\nIn addition: Warning message:\npackage ‘torch’ was built under R version 4.4.1\n")


def python_traceback(text: str) -> str:
    return ("Traceback (most recent call last):\n  File \"/srv/app/train.py\", line 3, in <module>\n"
            "    import torch\n  File \"/srv/venv/lib/python3.12/site-packages/torch/__init__.py\", line 290, "
            "in <module>\n    from torch._C import *  # noqa: F403\n" + text.strip() + "\n")


def jupyter(text: str) -> str:
    lines = [f"\x1b[0;31m{line}\x1b[0m" if line.strip() else line for line in text.strip().splitlines()]
    return ("\x1b[0;31m---------------------------------------------------------------------------\x1b[0m\r\n"
            + "\r\n".join(lines) + "\r\n")


def rstudio(text: str) -> str:
    return "> source(\"~/analysis/fit.R\", echo = TRUE)\n\n> fit <- train(model, data)\n" + text.strip() + "\n> \n"


def conda_paths(text: str) -> str:
    return re.sub(r"(?<![\w.~-])/(usr|opt|home|lib|lib64)/", r"/home/jdoe/miniconda3/envs/dl/\1/", text)


def windows_paths(text: str) -> str:
    """A Windows text from another user and drive, with a space in the path (C:\\Users\\me -> E:\\Users\\Jane Doe)."""
    return re.sub(r"\b[A-Z]:\\(?:Users\\[^\\\s]+\\)?", lambda m: "E:\\Users\\Jane Doe\\", text)


def other_versions(text: str) -> str:
    """Every dotted version's last part bumped (11.8 -> 11.9, 2.1.0 -> 2.1.1, GLIBCXX_3.4.30 -> 3.4.31)."""
    def bump(m: re.Match) -> str:
        head, _, last = m.group(0).rpartition(".")
        return f"{head}.{int(last) + 1}"

    return re.sub(r"(?<!\d)(?<!\d\.)\d{1,4}(?:\.\d{1,4})+(?!\.?\d)", bump, text)


def other_library(text: str) -> str:
    """A CUDA library the text cannot load swapped for another one: the same cause, another name."""
    return re.sub(r"\blib(cudart|cudnn|cublas|cublasLt|cufft|curand|cusparse|nvrtc)\.so\.(\d+)", r"libnvJitLink.so.\2",
                  text)


WRAPPERS = [r_package_load, python_traceback, jupyter, rstudio, conda_paths, windows_paths, other_versions,
            other_library]


def _ids(text: str) -> list[str]:
    return [f.evidence.get("symptom") for f in explain(text, SYMPTOMS).findings]


@pytest.mark.parametrize("wrap", WRAPPERS, ids=lambda w: w.__name__)
def test_a_wrapped_text_is_placed_like_the_original(wrap):
    allowed_extra = CLASSES | {"r-package-load-failed", "python-module-not-found"}
    moved = []
    for case in CASES:
        original = [i for i in _ids(case["text"]) if i]
        wrapped = [i for i in _ids(wrap(case["text"])) if i]
        if not set(original) <= set(wrapped) or not set(wrapped) - set(original) <= allowed_extra:
            moved.append(f"{case['source']}: {original} -> {wrapped}")
    assert not moved, f"{len(moved)} of {len(CASES)} texts placed otherwise:\n" + "\n".join(moved[:10])


def test_the_wrappers_change_the_text():
    sample = "ImportError: /usr/lib/libcudart.so.11.0: cannot open shared object file (GLIBCXX_3.4.30) C:\\x.dll"
    for wrap in WRAPPERS:
        assert wrap(sample) != sample, wrap.__name__
    assert "libnvJitLink.so.11" in other_library(sample) and "3.4.31" in other_versions(sample)
    assert "/home/jdoe/miniconda3/envs/dl/usr/lib/" in conda_paths(sample)
    assert "E:\\Users\\Jane Doe\\x.dll" in windows_paths(sample)
