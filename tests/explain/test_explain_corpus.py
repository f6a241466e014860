"""explain on the error texts users pasted in public reports (fixtures/explain/corpus.toml).

Each case is one test: explain must report exactly the expected symptoms of symptoms.toml, in log
order, each with a cause, a remedy and confirming commands that name what the text named; a structural
class (explain_classes.toml) may add what the rows do not cover. A text explain cannot place fails
here; nothing is skipped. The ids say which part of the split (rcompat/explain/corpus.py) a case is in.
"""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from rcompat.model import Status
from rcompat.explain import explain, load_symptoms
from rcompat.explain.corpus import is_held_out

REPO = Path(__file__).resolve().parents[2]
CASES = tomllib.loads((REPO / "fixtures" / "explain" / "corpus.toml").read_text(encoding="utf-8"))["case"]
SYMPTOMS = load_symptoms()


def _id(case) -> str:
    part = "held" if is_held_out(case["source"]) else "dev"
    return f"{part}:{case['expect'][0]}:{re.sub(r'[^A-Za-z0-9]+', '-', case['source'].split('github.com/')[-1])[:60]}"


def test_the_corpus_is_large_and_cited():
    assert len(CASES) >= 60
    for case in CASES:
        assert case["source"].strip() and case["text"].strip() and case["expect"], case
    # one text reported in several issues is several cases; the same report twice is a duplicate
    assert len({(c["source"], c["text"]) for c in CASES}) == len(CASES), "a case appears twice"
    covered = {s for c in CASES for s in c["expect"]}
    known = {s.id for s in SYMPTOMS if s.patterns and not s.generic}  # rows without patterns: child ends
    assert covered <= known
    # every symptom but those only rcompat's own fixtures show (R builds, TorchScript) has a real report
    assert known - covered <= {"c17-required", "nccl-watchdog-timeout", "unknown-builtin-op", "cuda-not-available",
                               "torch-tensor-segfault"}, known - covered


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_case_is_explained(case):
    report = explain(case["text"], SYMPTOMS)
    got = [f.evidence.get("symptom") for f in report.findings if not f.evidence["class"]]
    assert got == case["expect"], f"{case['source']}: {got}"
    for finding in report.findings:
        assert finding.remedy and finding.source and finding.confidence
        assert finding.status is Status.FAIL or finding.evidence["class"]
        assert finding.evidence["confirm"], finding.id
        explained = finding.message.partition("\nMatched at ")[0]  # the excerpt after it is the user's text
        assert "{" not in explained + finding.remedy  # every placeholder filled or dropped
        assert "  " not in finding.remedy


def test_captures_reach_the_texts():
    by_source = {c["source"]: c for c in CASES}
    finding = explain(by_source["https://github.com/pwncollege/ctf-archive/issues/78"]["text"]).findings[0]
    assert finding.evidence["confirm"][0] == "rcompat elf versions /challenge/admin-panel"
    assert "GLIBC_2.34" in finding.message
    finding = explain(by_source["https://github.com/pytorch/pytorch/issues/45028"]["text"]).findings[0]
    assert "sm_80" in finding.remedy and "sm_37 sm_50 sm_60 sm_70" in finding.message
    ordered = explain(by_source["https://github.com/mlverse/torch/issues/1463"]["text"]).findings[0]
    assert ordered.evidence["groups"]["lib"] == "libcudart.so.12"


def test_a_mangled_symbol_is_named_demangled():
    case = next(c for c in CASES if "ProfilerResult4saveERKSs" in c["text"])
    finding = explain(case["text"]).findings[0]
    assert finding.evidence["groups"]["symbol_demangled"] == \
        "torch::autograd::profiler::ProfilerResult::save(std::string const&)"
    assert "torch::autograd::profiler::ProfilerResult::save(std::string const&)" in finding.message


def test_a_whole_log_reports_every_symptom_once_in_order():
    texts = [c["text"] for c in CASES[:40]]
    report = explain("\nnoise line\n".join(texts), SYMPTOMS)
    ids = [f.id for f in report.findings]
    assert len(ids) == len(set(ids))  # one finding per symptom: ids unique within the report
    expected = list(dict.fromkeys(s for c in CASES[:40] for s in c["expect"]))
    got = [f.evidence["symptom"] for f in report.findings]
    assert set(expected) <= set(got)
    lines = [f.evidence["line"] for f in report.findings]
    assert lines == sorted(lines)
    repeated = next(f for f in report.findings if f.evidence["symptom"] == "driver-too-old")
    assert len(repeated.evidence["occurrences"]) == 3 and "Also at line(s)" in repeated.message
