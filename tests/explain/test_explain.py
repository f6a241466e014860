"""explain: every symptom in the table is recognised from a realistic log, and unknown text says so."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from rcompat.errors import DataError, UsageError
from rcompat.model import Status
from rcompat.explain import explain, find_matches, load_symptoms, read_text

REPO = Path(__file__).resolve().parents[2]
LOGS = REPO / "fixtures" / "logs"
SYMPTOMS = load_symptoms()


def _intended(log: Path) -> str:
    return log.name.split(".")[0]  # <symptom-id>[.variant].log


@pytest.mark.parametrize("log", sorted(LOGS.glob("*.log")), ids=lambda p: p.name)
def test_each_log_is_matched_by_its_symptom(log):
    matches = find_matches(log.read_text(), SYMPTOMS)
    assert matches, f"{log.name}: nothing matched"
    # a log may show a generic symptom first (R's "package or namespace load failed" before its cause)
    assert _intended(log) in [m.symptom.id for m in matches]
    assert [m.first_line for m in matches] == sorted(m.first_line for m in matches)
    # a superseded generic symptom never shows next to the specific one on the same lines
    ids = [m.symptom.id for m in matches]
    for m in matches:
        assert not set(m.symptom.supersedes) & set(ids) or all(
            not other.overlaps(m) for other in matches if other.symptom.id in m.symptom.supersedes)


def test_every_symptom_has_a_log_fixture_or_a_corpus_case():
    import tomllib

    corpus = [case for name in ("corpus", "new_cases", "code_errors")
              for case in tomllib.loads((REPO / "fixtures" / "explain" / f"{name}.toml").read_text(encoding="utf-8"))["case"]]
    covered = {_intended(p) for p in LOGS.glob("*.log")} | {s for c in corpus for s in c["expect"]}
    assert {s.id for s in SYMPTOMS if s.patterns} <= covered  # rows without patterns explain only child ends


def test_captured_groups_reach_the_confirming_command():
    text = (LOGS / "two-libtorch-copies.nvshmem.log").read_text()
    finding = explain(text, SYMPTOMS).findings[0]
    lib = "/home/user/.virtualenvs/r-torch/lib/python3.12/site-packages/torch/lib/libtorch_nvshmem.so"
    assert finding.evidence["confirm"][0].startswith("rcompat elf coload ")
    assert finding.evidence["confirm"][0].endswith(f"/liblantern.so\" -- {lib}")
    assert finding.evidence["groups"]["symbol"] == "_ZN3c1013MessageLogger6streamB5cxx11Ev"
    assert "libtorch_nvshmem.so needs c10::MessageLogger::stream[abi:cxx11]()" in finding.message
    assert finding.status is Status.FAIL and finding.source and finding.confidence == "high"


def test_a_command_needing_an_uncaptured_group_is_dropped():
    finding = explain("ImportError: libcudart.so.12: cannot open shared object file", SYMPTOMS).findings[0]
    assert finding.id == "EXPLAIN-SHARED-LIBRARY-NOT-FOUND"
    assert finding.evidence["confirm"] == ["rcompat doctor --only cuda,elf"]
    assert "libcudart.so.12" in finding.remedy


def test_specific_symptom_hides_the_generic_one_on_the_same_line():
    text = (LOGS / "tf-dlopen-cuda-library.log").read_text()
    assert [m.symptom.id for m in find_matches(text, SYMPTOMS)] == ["tf-dlopen-cuda-library"]


def test_two_failures_in_one_log_are_both_reported_in_log_order():
    text = ("ImportError: /lib64/libstdc++.so.6: version `GLIBCXX_3.4.30' not found\n"
            "Error: C stack usage  7971092 is too close to the limit\n")
    assert [m.symptom.id for m in find_matches(text, SYMPTOMS)] == ["glibcxx-not-found", "c-stack-usage"]


def test_unknown_text_says_no_known_symptom_matched_and_exits_0(cli):
    report = explain("everything is fine, the model converged", SYMPTOMS)
    assert [f.id for f in report.findings] == ["EXPLAIN-NO-MATCH"]
    assert report.findings[0].status is Status.SKIP and report.exit_code() == 0
    run = cli("explain", "the model converged")
    assert run.returncode == 0 and "no known symptom matched" in run.stdout


def test_cli_from_file_and_stdin_json(cli, tmp_path):
    run = cli("explain", "--from-file", str(LOGS / "driver-too-old.log"), "-f", "json")
    assert run.returncode == 1
    doc = json.loads(run.stdout)
    assert doc["findings"][0]["id"] == "EXPLAIN-DRIVER-TOO-OLD"
    assert doc["findings"][0]["evidence"]["groups"] == {"found": "11040"}
    import subprocess
    import sys
    piped = subprocess.run([sys.executable, "-m", "rcompat", "explain", "-"], input="Lantern is not loaded.",
                           capture_output=True, text=True, cwd=str(REPO))
    assert piped.returncode == 1 and "EXPLAIN-LANTERN-NOT-LOADED" in piped.stdout


def test_cli_errors_are_one_line_exit_2(cli):
    for args in (("explain",), ("explain", "--from-file", "/nonexistent/log.txt")):
        run = cli(*args)
        assert run.returncode == 2
        assert run.stderr.strip().count("\n") == 0 and "rcompat: error:" in run.stderr


def test_read_text_rejects_blank_input():
    with pytest.raises(UsageError):
        read_text(["   "], None)


def test_bad_symptom_table_is_a_data_error(tmp_path):
    bad = tmp_path / "s.toml"
    bad.write_text('[[symptom]]\nid="x"\ntitle="t"\npatterns=["(unclosed"]\ncause="c"\nconfirm=["c"]\n'
                   'remedy="r"\nsource="s"\nconfidence="high"\n')
    with pytest.raises(DataError, match="bad pattern"):
        load_symptoms(bad)


@pytest.mark.parametrize("field, value", [("confirm", '["rcompat doctor {bad"]'), ("cause", '"c {0}"'),
                                          ("remedy", '"r {a.b}"'), ("patterns", "[3]")])
def test_bad_template_or_pattern_is_a_data_error_before_matching(cli, tmp_path, field, value):
    # these used to load, then fail inside str.format/re.compile as an internal error
    row = {"id": '"x"', "title": '"t"', "patterns": '["x"]', "cause": '"c"', "confirm": '["c"]', "remedy": '"r"',
           "source": '"s"', "confidence": '"high"', field: value}
    bad = tmp_path / "s.toml"
    bad.write_text("[[symptom]]\n" + "".join(f"{k} = {v}\n" for k, v in row.items()))
    with pytest.raises(DataError, match="symptom 'x'"):
        load_symptoms(bad)
    run = cli("explain", "--symptoms", str(bad), "x")
    assert run.returncode == 2 and "internal error" not in run.stderr, run.stderr
    assert run.stderr.strip().count("\n") == 0


def test_list_names_every_symptom(cli):
    run = cli("explain", "--list")
    assert run.returncode == 0
    lines = run.stdout.splitlines()
    assert {line.split()[0] for line in lines if not line.startswith(" ")} == {s.id for s in SYMPTOMS}
    assert max(len(line) for line in lines) <= 80  # long titles wrap under themselves
    assert any(line.startswith(" ") for line in lines)  # this table has titles that need it
    titles = " ".join(line.split(None, 1)[1] if not line.startswith(" ") else line.strip() for line in lines)
    assert all(s.title in titles for s in SYMPTOMS)
