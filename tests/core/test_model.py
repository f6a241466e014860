import json

import pytest

from rcompat.model import SCHEMA_VERSION, Finding, Report, Status


def _report(*statuses):
    return Report(findings=[Finding(id=f"T-{i}", area="t", status=s, title=f"finding {i}",
                                    evidence={"path": f"/x/{i}", "n": i, "tags": {"b", "a"}})
                            for i, s in enumerate(statuses)])


@pytest.mark.parametrize("statuses, normal, strict", [
    ((Status.OK, Status.SKIP), 0, 0),
    ((Status.OK, Status.WARN), 0, 1),
    ((Status.OK, Status.FAIL), 1, 1),
    ((Status.ERROR,), 1, 1),
    ((), 0, 0),
])
def test_exit_codes(statuses, normal, strict):
    r = _report(*statuses)
    assert r.exit_code() == normal
    assert r.exit_code(strict=True) == strict


def test_finding_requires_id_and_valid_status():
    with pytest.raises(ValueError):
        Finding(id="", area="a", status="ok", title="t")
    with pytest.raises(ValueError):
        Finding(id="X", area="a", status="bogus", title="t")


def test_json_round_trip_keeps_everything():
    r = _report(Status.OK, Status.FAIL)
    data = json.loads(r.to_json())
    assert data["schema_version"] == SCHEMA_VERSION
    assert data["summary"]["counts"]["fail"] == 1
    assert data["findings"][0]["evidence"]["tags"] == ["a", "b"]  # sets become sorted lists
    back = Report.from_dict(data)
    assert [f.id for f in back.findings] == ["T-0", "T-1"]
    assert back.findings[1].status is Status.FAIL


def test_from_dict_rejects_other_schema():
    with pytest.raises(ValueError):
        Report.from_dict({"schema_version": 999})


def test_to_frame_has_one_row_per_finding():
    frame = _report(Status.OK, Status.WARN, Status.SKIP).to_frame()
    assert list(frame["status"]) == ["ok", "warn", "skip"]
    assert {"id", "area", "status", "title", "message", "remedy", "evidence", "source"} <= set(frame.columns)


def test_json_keys_and_frame_columns_are_the_finding_fields():
    from rcompat.model import FINDING_FIELDS

    report = _report(Status.OK)
    assert tuple(report.findings[0].to_dict()) == FINDING_FIELDS
    assert tuple(report.to_frame().columns) == FINDING_FIELDS


def test_a_users_table_path_is_read_as_given_and_never_falls_back(tmp_path, monkeypatch):
    import pytest

    from rcompat.data import load_toml
    from rcompat.errors import DataError

    monkeypatch.chdir(tmp_path)
    (tmp_path / "r_rules.toml").write_text('[[rule]]\nid = "MINE"\nsource = "a test"\n')
    packaged = load_toml("r_rules.toml", "rule")  # a bare str name: the packaged table
    assert "MINE" not in {r["id"] for r in packaged}
    from pathlib import Path

    assert [r["id"] for r in load_toml(Path("r_rules.toml"), "rule")] == ["MINE"]  # a Path: the user's
    with pytest.raises(DataError):
        load_toml(Path("missing.toml"), "rule")  # not silently replaced by a packaged table
