"""explain measured like a model (rcompat/explain/corpus.py): the corpus split by source into a
development and a held-out part, the rate each places, the second held-out set of texts collected after
the rules were written, and the user-code errors that must never be blamed on the environment.
`.venv/bin/python scripts/explain_rates.py` prints the same figures (docs/explain.md)."""
from __future__ import annotations

import pytest

from rcompat.explain import explain, load_symptoms
from rcompat.explain.corpus import is_held_out, load_cases, placed, rates, split, split_key

SYMPTOMS = load_symptoms()


def test_split_is_by_source_deterministic_and_holds_out_at_least_a_third():
    cases = load_cases("corpus")
    dev, held = split(cases)
    assert len(held) * 3 >= len(cases) and dev
    assert split(cases) == (dev, held)
    sides: dict[str, set[bool]] = {}
    for case in cases:
        sides.setdefault(split_key(case["source"]), set()).add(is_held_out(case["source"]))
    assert all(len(s) == 1 for s in sides.values())  # one project's reports on one side
    assert split_key("mlverse/torch issue 815 (as quoted in ...)") == split_key("https://github.com/mlverse/torch/issues/1")


def test_the_second_set_shares_no_source_with_the_corpus():
    corpus = {c["source"] for c in load_cases("corpus")}
    new, code = load_cases("new"), load_cases("code")
    assert len(new) >= 45 and len(code) >= 30
    for case in new + code:
        assert case["source"].startswith("https://github.com/") and case["source"] not in corpus
        assert case["text"].strip()
    assert len({c["source"] for c in new + code}) == len(new) + len(code)


def test_rates(capsys):
    figures = rates(SYMPTOMS)
    with capsys.disabled():
        print("\n" + "\n".join(f"  explain {name}: {rate}" for name, rate in figures.items()))
    assert figures["corpus held-out"].percent >= 90, figures["corpus held-out"].missed
    assert figures["new texts (held-out)"].percent >= 90, figures["new texts (held-out)"].missed
    assert figures["corpus development"].percent >= 90


@pytest.mark.parametrize("case", load_cases("code"), ids=lambda c: c["source"].split("github.com/")[-1])
def test_a_code_error_is_never_blamed_on_the_environment(case):
    report = explain(case["text"], SYMPTOMS)
    assert not [f.id for f in report.findings if str(f.status) == "fail"]
    assert report.exit_code() == 0
    assert placed(case, report)
