"""The breakage rules: pure evaluation over the real TOML, plus one run against installed fixtures."""
from __future__ import annotations

import pytest

from rcompat.areas import Context
from rcompat.errors import DataError
from rcompat.r import checks
from rcompat.r.rules import evaluate, load_rules

RULES = load_rules()


def _ids(stack):
    return {hit.rule.id for hit in evaluate(stack, RULES)}


@pytest.mark.parametrize("rule", RULES, ids=lambda r: r.id)
def test_each_rule_fires_on_the_versions_it_names_and_not_on_others(rule):
    assert rule.fires_on and rule.quiet_on, f"{rule.id} needs fires_on and quiet_on examples"
    for stack in rule.fires_on:
        assert rule.id in _ids(stack), f"{rule.id} should fire on {stack}"
    for stack in rule.quiet_on:
        assert rule.id not in _ids(stack), f"{rule.id} should stay quiet on {stack}"


def test_every_rule_names_source_and_an_honest_confidence():
    for rule in RULES:
        assert rule.source and rule.confidence in ("high", "medium", "low", "unverified")
    unverified = {r.id for r in RULES if r.confidence == "unverified"}
    assert {"R-R45-TORCH-TENSOR-SEGV", "R-R45-KERAS-2150-PARTIAL", "R-KERAS212-TORCH0101-ABI"} <= unverified


@pytest.mark.parametrize("stack, fires", [
    ({"R": "4.5.0", "torch": "0.12.1"}, True),
    ({"R": "4.5", "torch": "0.11.1"}, True),
    ({"R": "4.4.3", "torch": "0.11.1"}, False),   # the fallback pin on older R
    ({"R": "4.5.0", "torch": "0.12.2"}, False),   # the fix
    ({"R": "4.5.0", "torch": "0.12.2.9000"}, False),
    ({"R": "4.5.0", "torch": "0.12.1.9000"}, True),
])
def test_r45_torch_segv_boundaries(stack, fires):
    assert ("R-R45-TORCH-TENSOR-SEGV" in _ids(stack)) is fires


def test_absent_components_never_fire():
    assert _ids({"R": "4.5.0"}) == set()
    assert _ids({"torch": "0.10.1"}) == set()
    assert _ids({}) == set()
    assert "R-KERAS2-TF216" not in _ids({"keras": "2.15.0", "python:tensorflow": ""})


def test_reticulate_style_versions_compare_numerically():
    # 1.28 > 1.3 for R versions; an R-dash version parses too.
    from rcompat.versions import matches

    assert matches("1.28", ">1.3") and matches("1.2-3", "<1.3") and matches("0.12.2.9000", ">0.12.2")


def test_hit_becomes_a_finding_that_says_unverified():
    (hit,) = [h for h in evaluate({"R": "4.5.1", "torch": "0.11.1"}, RULES)]
    finding = hit.to_finding()
    assert finding.id == "R-R45-TORCH-TENSOR-SEGV" and finding.area == "r"
    assert finding.status.value == "fail" and finding.confidence == "unverified"
    assert "unverified" in finding.message and "R 4.5.1, torch 0.11.1" in finding.message
    assert finding.evidence["matched"] == {"R": "4.5.1", "torch": "0.11.1"}


@pytest.mark.parametrize("body, needle", [
    ('[[rule]]\nid="X"\nwhen={R=">=4"}\nstatus="fail"\ntitle="t"\nmessage="m"\nremedy="r"\nconfidence="high"\n',
     "lacks 'source'"),
    ('[[rule]]\nid="X"\nwhen={R=">=four"}\nstatus="fail"\ntitle="t"\nmessage="m"\nremedy="r"\nsource="s"\n'
     'confidence="high"\n', "when.R"),
    ('[[rule]]\nid="X"\nwhen={R=">=4"}\nstatus="bad"\ntitle="t"\nmessage="m"\nremedy="r"\nsource="s"\n'
     'confidence="high"\n', "status"),
    ('[[rule]]\nid="X"\nwhen={R=">=4"}\nstatus="warn"\ntitle="t"\nmessage="m"\nremedy="r"\nsource="s"\n'
     'confidence="sure"\n', "confidence"),
])
def test_malformed_rule_tables_name_the_row(tmp_path, body, needle):
    path = tmp_path / "rules.toml"
    path.write_text(body)
    with pytest.raises(DataError, match=needle):
        load_rules(path)


def test_a_maintainer_adds_a_rule_by_editing_the_table(tmp_path):
    path = tmp_path / "rules.toml"
    path.write_text('[[rule]]\nid="R-NEW"\nwhen={reticulate="<1.30", "python:numpy"=">=2"}\nstatus="warn"\n'
                    'title="t"\nmessage="m"\nremedy="r"\nsource="s"\nconfidence="low"\n')
    rules = load_rules(path)
    assert [h.rule.id for h in evaluate({"reticulate": "1.28", "python:numpy": "2.4.6"}, rules)] == ["R-NEW"]
    assert evaluate({"reticulate": "1.30", "python:numpy": "2.4.6"}, rules) == []


def test_rules_fire_end_to_end_on_installed_fixture_versions(rlibs):
    ctx = Context(timeout=60, options={"r_lib_paths": [str(rlibs["abi"])]})
    ids = {f.id for f in checks.check_rules(ctx)}
    assert "R-KERAS212-TORCH0101-ABI" in ids
    ok = Context(timeout=60, options={"r_lib_paths": [str(rlibs["ok"])]})
    assert "R-KERAS212-TORCH0101-ABI" not in {f.id for f in checks.check_rules(ok)}


def test_rules_cli_exit_codes(cli):
    hit = cli("r", "rules", "--check", "R=4.5.0", "torch=0.12.1")
    assert hit.returncode == 1 and "R-R45-TORCH-TENSOR-SEGV" in hit.stdout
    quiet = cli("r", "rules", "--check", "R=4.4.0", "torch=0.12.1")
    assert quiet.returncode == 0 and "no rule fires" in quiet.stdout
    bad = cli("r", "rules", "--check", "torch=banana")
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "not a version" in bad.stderr
    listing = cli("r", "rules", "--format", "json")
    assert listing.returncode == 0 and '"R-KERAS2-TF216"' in listing.stdout


def test_a_component_given_twice_is_a_usage_error():
    import pytest

    from rcompat.errors import UsageError
    from rcompat.r.rules import parse_stack

    with pytest.raises(UsageError, match="given twice"):
        parse_stack(["R=4.5", "R=4.4"])
