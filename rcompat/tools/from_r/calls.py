"""What the R package can call (rcompat.tools.from_r.call): each function takes JSON-decoded keyword
arguments and returns one JSON table (rcompat.tools.from_r.tables). Engines are imported when called."""
from __future__ import annotations

import contextlib
import io
import itertools
import json
import os
import tempfile
from typing import Any, Callable

from rcompat.tools.from_r.tables import findings_table, frame_table, report_table, table


def doctor(areas: Any = None, timeout: float | None = None) -> str:
    from rcompat.areas import run_doctor

    report = run_doctor(_as_list(areas), timeout=timeout)
    _add_host_r_version(report)
    return report_table(report)


def explain(text: str) -> str:
    from rcompat.explain.report import explain as run

    report = run(text)
    return findings_table(report.findings, command="explain", exit_code=report.exit_code())


def lock_check(path: str, rules: str | None = None) -> str:
    from rcompat.tools.lock import check_lockfile

    return report_table(check_lockfile(path, rules_path=rules))


def snapshot_save(path: str) -> str:
    from rcompat.tools import snapshot
    from rcompat.tools.from_r.host import host_facts

    snap = snapshot.collect(host_r=host_facts())  # the R section reads its version, platform, packages
    snapshot.save(path, snap)
    return table([{"section": k, "recorded": k not in snap["errors"], "error": snap["errors"].get(k, "")}
                  for k in snapshot.SECTIONS], ["section", "recorded", "error"], types={"recorded": "logical"},
                 command="snapshot save", facts={"path": path})


ELF_MISSING_COLUMNS = ["kind", "name", "version", "needed_by", "loader_message", "explanation"]


def elf_missing(path: str) -> str:
    import rcompat.elf

    result = rcompat.elf.missing(path).to_dict()
    rows = [{"kind": "library", "name": name, "version": None, "needed_by": None,
             "loader_message": f"{name}: cannot open shared object file", "explanation": "not found"}
            for name in result.get("missing_libraries", [])]
    rows += [{"kind": "symbol", "name": m["name"], "version": m.get("version"),
              "needed_by": m.get("needed_by"), "loader_message": m.get("loader_message"),
              "explanation": m.get("explanation")} for m in result.get("missing_symbols", [])]
    return table(rows, ELF_MISSING_COLUMNS, command="elf missing",
                 facts={"root": result.get("root"), "bound": result.get("bound")})


def abi_diff(old: str, new: str) -> str:
    import rcompat.elf

    diff = rcompat.elf.abi_diff(old, new)
    return frame_table(diff.to_frame(), command="elf abi-diff", facts={"old": old, "new": new})


def device() -> str:
    import rcompat

    choice = rcompat.device()
    d = choice.to_dict() if hasattr(choice, "to_dict") else {"device": str(choice)}
    row = {"device": d.get("device"), "reason": d.get("reason", ""), "remedy": d.get("remedy", "")}
    return table([row], ["device", "reason", "remedy"], facts=d.get("facts") or {}, command="cuda device")


def race(**kwargs: Any) -> str:
    import rcompat.race

    result = rcompat.race.run(**kwargs)
    return frame_table(result.to_frame(), command="race")


def upgrade(old: str, new: str, driver: str | None = None, carry: Any = ()) -> str:
    import rcompat

    return report_table(rcompat.upgrade(old, new, driver=driver, carry=_as_list(carry) or ()))


PARITY_RECORD_COLUMNS = ["case", "status", "outputs", "message"]


def parity_record(output: str, **options: Any) -> str:
    from rcompat.parity.recording import RecordOptions, record

    rec = record(RecordOptions(output=output, **options))
    cases = rec.manifest.get("cases", {})
    rows = [{"case": cid, "status": case.get("status"), "outputs": ", ".join(case.get("outputs", {})),
             "message": case.get("message") or ""} for cid, case in cases.items()]
    facts = {k: v for k, v in rec.manifest.items() if k != "cases"}
    return table(rows, PARITY_RECORD_COLUMNS, facts={"path": rec.path, "manifest": facts},
                 command="parity record")


def parity_compare(a: str, b: str, rtol: float | None = None, atol: float | None = None) -> str:
    import rcompat.parity

    return report_table(rcompat.parity.compare(a, b, rtol=rtol, atol=atol))


def ci_matrix(dimensions: dict, rules: str | None = None, cuda_tables: str | None = None,
              min_confidence: str | None = None) -> str:
    from rcompat.tools.cimatrix import DIMENSION_ORDER, parse_list, plan_matrix

    unknown = sorted(set(dimensions) - set(DIMENSION_ORDER))
    if unknown:
        raise ValueError(f"unknown dimension {unknown[0]!r}: choose from {', '.join(DIMENSION_ORDER)}")
    dims = {k: parse_list(",".join(str(v) for v in _as_list(values) or []), k, allow_cpu=(k == "cuda"))
            for k, values in dimensions.items()}
    kwargs = {"min_confidence": min_confidence} if min_confidence else {}
    plan = plan_matrix(dims, rules_path=rules, cuda_tables=cuda_tables, **kwargs)
    columns = [k for k in DIMENSION_ORDER if k in plan.dimensions]
    rows = [{**cell, "run": True, "reason": ""} for cell in plan.include]
    rows += [{**e.cell, "run": False, "reason": "; ".join(f"{r.get('id')}: {r.get('reason')}" for r in e.reasons)}
             for e in plan.excluded]
    order = {cell: i for i, cell in enumerate(itertools.product(*(plan.dimensions[k] for k in columns)))}
    rows.sort(key=lambda row: order.get(tuple(row[k] for k in columns), len(order)))  # the product's order
    facts = {k: v for k, v in plan.to_dict().items() if k != "include"}
    return table(rows, columns + ["run", "reason"], types={"run": "logical"}, facts=facts, command="ci matrix")


def cli_report(argv: list) -> str:
    """`rcompat ARGV --format json -o TMP` through the CLI's own main (stdout and stderr kept from R's
    console); the report's findings as a table (or the rows of a document that is not a report), or its
    last stderr line as the error (exit 2)."""
    from rcompat.cli.main import main

    argv = [str(a) for a in argv]
    with tempfile.TemporaryDirectory(prefix="rcompat-r-") as work:
        out = os.path.join(work, "report.json")
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = main([*argv, "--format", "json", "--output", out])
        if code not in (0, 1) or not os.path.exists(out):
            lines = [line for line in err.getvalue().splitlines() if line.strip()]
            raise ValueError(lines[-1] if lines else f"rcompat {' '.join(argv)} exited {code}")
        with open(out, encoding="utf-8") as handle:  # our own temp file, just written by rcompat
            doc = json.load(handle)
    if "findings" in doc:  # a Report (docs/report-schema.md)
        return findings_table(doc["findings"], facts=doc.get("facts"), command=doc.get("command", ""),
                              exit_code=code)
    # another document (`model inspect`: {"models": [...]}): its list of records, one row each
    key = next((k for k, v in doc.items() if isinstance(v, list) and v and all(isinstance(r, dict) for r in v)), None)
    rows = doc[key] if key else []
    columns = list(dict.fromkeys(column for row in rows for column in row))
    facts = {k: v for k, v in doc.items() if k not in ("schema_version", "tool")}
    return table(rows, columns, facts=facts, command=doc.get("command", ""), exit_code=code)


def has_command(words: Any) -> str:
    """Whether `rcompat WORDS…` exists in this rcompat (e.g. ["model", "check"])."""
    from rcompat.cli.main import build_parser

    words = [str(w) for w in _as_list(words) or []]
    parser = build_parser(words)
    found = True
    for word in words:
        sub = next((a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction"), None)
        if sub is None or word not in sub.choices:
            found = False
            break
        parser = sub.choices[word]
    return json.dumps({"value": found})


def version() -> str:
    from rcompat import __version__

    return json.dumps({"value": __version__})


def _as_list(value: Any) -> list | None:
    if value is None:
        return None
    if isinstance(value, str):
        return [value]
    return list(value)


def _add_host_r_version(report: Any) -> None:
    """When the R area could not name the version (engine missing or failed), the host R knows it."""
    from rcompat.model import Finding, Status
    from rcompat.tools.from_r.host import host_facts

    facts = host_facts()
    if not facts or not facts.get("version"):
        return
    at = next((i for i, f in enumerate(report.findings) if f.id == "R-VERSION"), None)
    if at is not None and report.findings[at].status.value == "ok":
        return
    evidence = {"via": "R host", "version": facts["version"], "platform": facts.get("platform")}
    if at is not None:
        evidence["engine_said"] = f"{report.findings[at].status.value}: {report.findings[at].message}"
    finding = Finding(
        id="R-VERSION", area="r", status=Status.OK, title=facts.get("version_string") or f"R {facts['version']}",
        message="Reported by the R session that called rcompat through reticulate.", evidence=evidence)
    if at is None:
        report.findings.insert(0, finding)
    else:
        report.findings[at] = finding


CALLS: dict[str, Callable[..., str]] = {
    f.__name__: f for f in (doctor, explain, lock_check, snapshot_save, elf_missing, abi_diff, device, race,
                            upgrade, parity_record, parity_compare, ci_matrix, cli_report, has_command, version)}
