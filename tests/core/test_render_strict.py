"""Output its consumers accept (issue 21.6, renderer part): strict JSON, and any byte a name may hold
escaped in JUnit, text and Markdown."""
from __future__ import annotations

import json
import math
import os
import xml.etree.ElementTree as ET

import pytest

from rcompat.model import Finding, Report, Status
from rcompat.renderers import render

# A tar member name as os.fsdecode gives it: bytes \xff\xfe (not UTF-8), a newline, an escape sequence.
NAME = os.fsdecode(b"lib/\xff\xfe") + "\nsecond line\x1b[31m.so"


def _report() -> Report:
    return Report(command="parity compare", findings=[
        Finding(id="PARITY-X", area="parity", status=Status.FAIL, title=f"member {NAME} differs",
                message=f"output {NAME}: max error nan", remedy="look",
                evidence={"max_abs": math.nan, "limit": math.inf, "low": -math.inf, "name": NAME}),
        Finding(id="PARITY-Y", area="parity", status=Status.WARN, title=NAME, duration_s=0.25),
    ])


def _strict_loads(text: str):
    def refuse(constant):
        raise ValueError(f"non-standard JSON constant {constant}")

    return json.loads(text, parse_constant=refuse)


def test_json_is_strict_and_keeps_what_non_finite_numbers_were():
    data = _strict_loads(render(_report(), "json"))
    ev = data["findings"][0]["evidence"]
    assert (ev["max_abs"], ev["limit"], ev["low"]) == ("NaN", "Infinity", "-Infinity")
    assert "\\xff\\xfe" in ev["name"] and "\n" in ev["name"]  # bytes shown as text, a newline as JSON escapes it
    render(_report(), "json").encode("utf-8")  # no lone surrogate left: it encodes


def test_junit_is_well_formed_with_ids_as_names_and_real_times():
    xml = render(_report(), "junit")
    root = ET.fromstring(xml.encode("utf-8"))  # well-formed, as bytes a CI reads them
    cases = root.findall(".//testcase")
    assert [c.get("name") for c in cases] == ["PARITY-X", "PARITY-Y"]
    assert cases[1].get("time") == "0.250"
    title = cases[0].find("properties/property").get("value")
    assert "\\xff\\xfe" in title and "\\x1b" in title
    pytest.importorskip("junitparser").JUnitXml.fromstring(xml)


def test_text_keeps_a_name_on_its_line_and_paints_nothing():
    text = render(_report(), "text")
    text.encode("utf-8")
    assert "\x1b" not in text and "\\x1b[31m" in text
    headline = next(line for line in text.splitlines() if "PARITY-Y" in line)
    assert "second line" in headline  # the newline in the title is shown, not obeyed
    markdown = render(_report(), "markdown")
    assert "\x1b" not in markdown and all("PARITY-Y" not in line or "second line" in line
                                          for line in markdown.splitlines())
