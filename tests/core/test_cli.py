"""The CLI as a user runs it: real probes, real subprocesses, real exit codes."""
import importlib.util
import json
import os

import junitparser
import pytest

from rcompat.model import Finding, Report, Status
from rcompat.renderers import render


def test_version_and_help(cli):
    out = cli("--version")
    assert out.returncode == 0 and out.stdout.startswith("rcompat ")
    out = cli("doctor", "--help")
    assert out.returncode == 0 and "--only AREA" in out.stdout and "--strict" in out.stdout


def test_doctor_python_area_exits_0_and_json_parses(cli):
    out = cli("doctor", "--only", "python", "--format", "json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    ids = {f["id"] for f in data["findings"]}
    assert {"PY-VERSION", "PY-PACKAGES", "PY-TORCH"} <= ids
    if importlib.util.find_spec("torch") is not None:   # torch is installed only where a wheel fits
        assert data["facts"]["python"]["packages"]["torch"].startswith("2.13.0")
    assert data["summary"]["exit_code"] == 0


def test_unknown_area_exits_2_with_one_line(cli):
    out = cli("doctor", "--only", "nosuch")
    assert out.returncode == 2
    assert "unknown area 'nosuch'" in out.stderr
    assert "Traceback" not in out.stderr and len(out.stderr.strip().splitlines()) == 1


def test_bad_option_exits_2(cli):
    out = cli("doctor", "--format", "yaml")
    assert out.returncode == 2 and "invalid choice" in out.stderr


def test_output_file_is_written_atomically(cli, tmp_path):
    target = tmp_path / "report.md"
    out = cli("doctor", "--only", "python", "--format", "markdown", "--output", str(target))
    assert out.returncode == 0 and out.stdout == ""
    text = target.read_text()
    assert text.startswith("### rcompat doctor report") and "`PY-VERSION`" in text
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]  # no temp file left behind


def test_output_into_missing_directory_exits_2_and_writes_nothing(cli, tmp_path):
    target = tmp_path / "nowhere" / "r.json"
    out = cli("doctor", "--only", "python", "--output", str(target))
    assert out.returncode == 2 and "does not exist" in out.stderr
    assert not target.parent.exists()


def test_junit_output_parses_as_junit(cli, tmp_path):
    target = tmp_path / "r.xml"
    out = cli("doctor", "--only", "python", "--format", "junit", "--output", str(target))
    assert out.returncode == 0, out.stderr
    xml = junitparser.JUnitXml.fromfile(str(target))
    cases = [c for suite in xml for c in suite]
    assert any(c.name.startswith("PY-VERSION") for c in cases)
    # without torch (no wheel for this Python on disk) PY-TORCH is a skip, which JUnit does not count as passed
    torchless = importlib.util.find_spec("torch") is None
    assert all(c.is_passed for c in cases if not (torchless and c.name.startswith("PY-TORCH")))


def test_junit_maps_each_status():
    report = Report(findings=[Finding(id=f"X-{s.value}", area="x", status=s, title=s.value, message="m")
                              for s in Status])
    xml = junitparser.JUnitXml.fromstring(render(report, "junit"))
    suite = next(iter(xml))
    by_name = {c.name.split(":")[0]: c for c in suite}
    assert isinstance(by_name["X-fail"].result[0], junitparser.Failure)
    assert isinstance(by_name["X-error"].result[0], junitparser.Error)
    assert isinstance(by_name["X-skip"].result[0], junitparser.Skipped)
    assert by_name["X-ok"].is_passed and by_name["X-warn"].is_passed
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (5, 1, 1, 1)
    strict = next(iter(junitparser.JUnitXml.fromstring(render(report, "junit", strict=True))))
    assert strict.failures == 2


def test_text_has_colour_only_when_asked():
    report = Report(findings=[Finding(id="X-1", area="x", status="fail", title="broken", remedy="fix it")])
    plain = render(report, "text")
    assert "\x1b[" not in plain and "FAIL" in plain and "fix: fix it" in plain
    assert "\x1b[31m" in render(report, "text", colour=True)


def test_check_that_raises_becomes_error_and_others_still_run(monkeypatch):
    import importlib
    import types

    d = importlib.import_module("rcompat.areas")  # the module, not the rcompat.doctor() function

    def boom(ctx):
        raise RuntimeError("probe exploded")

    def fine(ctx):
        yield Finding(id="OK-1", area="fake", status="ok", title="fine")

    module = types.ModuleType("rcompat_fake_area")
    module.CHECKS = [boom, fine]
    monkeypatch.setitem(__import__("sys").modules, "rcompat_fake_area", module)
    monkeypatch.setitem(d.AREA_MODULES, "fake", "rcompat_fake_area")
    report = d.run_doctor(["fake"])
    assert [f.status for f in report.findings] == [Status.ERROR, Status.OK]
    assert "probe exploded" in report.findings[0].message
    assert report.exit_code() == 1


def test_cli_start_up_does_not_import_heavy_modules(tmp_path):
    import subprocess
    import sys

    code = ("import sys, rcompat.cli.main as m; m.build_parser(); "
            "print(','.join(x for x in ('pandas','torch','rpy2','numpy') if x in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=dict(os.environ))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


def test_atomic_write_gives_normal_file_mode(tmp_path):
    import stat

    from rcompat.atomic import write_text_atomic

    old = os.umask(0o022)
    try:
        path = write_text_atomic(tmp_path / "r.txt", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_binary_file_given_as_table_exits_2_with_one_line(cli, tmp_path):
    # a shared library passed as --symptoms/--file/--tables used to escape as an internal UnicodeDecodeError
    binary = tmp_path / "rules.toml"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(128, 256)))
    tables = tmp_path / "tables"
    tables.mkdir()
    (tables / "cuda_driver.csv").write_bytes(binary.read_bytes())
    for argv in (("explain", "--symptoms", str(binary), "x"), ("r", "rules", "--file", str(binary)),
                 ("matrix", "validate", "--tables", str(tables))):
        out = cli(*argv)
        assert out.returncode == 2, (argv, out.stderr)
        assert "cannot read table" in out.stderr and "internal error" not in out.stderr
        assert len(out.stderr.strip().splitlines()) == 1


def test_output_onto_a_directory_exits_2_and_leaves_no_temp_file(cli, tmp_path):
    target = tmp_path / "out"
    target.mkdir()
    out = cli("doctor", "--only", "python", "--output", str(target))
    assert out.returncode == 2 and f"cannot write {target}: is a directory" in out.stderr
    assert ".tmp" not in out.stderr and len(out.stderr.strip().splitlines()) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["out"] and not any(target.iterdir())


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_bad_timeout_is_refused_by_every_command(cli, tmp_path, value):
    # nan/inf reached int() in the child helper (internal error); <= 0 ran with children killed at once,
    # and `snapshot save` then wrote a snapshot with its sections "not recorded"
    snap = tmp_path / "s.json"
    for argv in (("doctor", "--only", "python"), ("r", "facts"), ("r", "verify"), ("cuda", "probe", "--no-r"),
                 ("device", "--no-cache"), ("snapshot", "save", str(snap))):
        out = cli(*argv, "--timeout", value)
        assert out.returncode == 2, (argv, out.stderr)
        assert "argument --timeout: must be a number of seconds" in out.stderr, (argv, out.stderr)
        assert "internal error" not in out.stderr and "Traceback" not in out.stderr
    assert not snap.exists()


def test_bad_output_target_fails_before_any_probe_runs(cli, tmp_path, monkeypatch, capsys):
    out = cli("doctor", "--output", str(tmp_path / "missing" / "r.json"))
    assert out.returncode == 2 and "does not exist" in out.stderr
    # the same command in this process, counting the doctor's runs instead of timing them
    import rcompat.areas
    from rcompat.cli.main import main

    runs = []
    monkeypatch.setattr(rcompat.areas, "run_doctor", lambda *a, **k: runs.append(a))
    assert main(["doctor", "--output", str(tmp_path / "missing" / "r.json")]) == 2
    assert runs == [], "the doctor ran before the output target was checked"
    assert "does not exist" in capsys.readouterr().err


def test_emit_report_writes_a_prefix_before_the_report(tmp_path, capsys):
    import argparse

    from rcompat.cli.common import emit_report

    report = Report(findings=[Finding(id="X-1", area="x", status="warn", title="w")])
    target = tmp_path / "r.md"
    args = argparse.Namespace(format="markdown", output=str(target), strict=True, verbose=False)
    assert emit_report(report, args, prefix="TABLE\n") == 1
    assert target.read_text().startswith("TABLE\n### rcompat doctor report")
    args.output = "-"
    emit_report(report, args, prefix="TABLE\n")
    assert capsys.readouterr().out.startswith("TABLE\n### rcompat")
    assert not (tmp_path / "-").exists()


def test_cli_fixture_pipes_input(cli):
    out = cli("explain", "-", input="Lantern is not loaded.")
    assert out.returncode == 1 and "EXPLAIN-LANTERN-NOT-LOADED" in out.stdout


def test_command_group_alone_prints_its_help_to_stderr_and_exits_2(capsys):
    from rcompat.cli.common import add_command_group
    from rcompat.cli.main import _Parser

    parser = _Parser(prog="rcompat")
    group = add_command_group(parser.add_subparsers(parser_class=_Parser), "grp", help="a group")
    group.add_parser("leaf").set_defaults(func=lambda args: 0)
    args = parser.parse_args(["grp"])
    assert args.func(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: rcompat grp") and "SUBCOMMAND" in err
    assert parser.parse_args(["grp", "leaf"]).func(None) == 0


def test_a_missing_command_module_is_an_error_not_a_silently_missing_command():
    import argparse

    import pytest

    from rcompat.cli.common import register_commands

    sub = argparse.ArgumentParser().add_subparsers()
    register_commands(sub, ("rcompat.cli.doctor_cmd",))
    assert list(sub.choices) == ["doctor"]
    with pytest.raises(ModuleNotFoundError):  # a broken install must show, not lose commands quietly
        register_commands(sub, ("rcompat.cli.no_such_commands",))
