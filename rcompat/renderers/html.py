"""A self-contained HTML page (inline CSS, no script, no external resource): the node x finding grid
coloured by status, the facts that differ, and every finding with its message.

A fleet report (`report.facts["fleet"]`) gives one row per group of nodes sharing the same statuses,
labelled with their Slurm hostlist, so 1,000 identical nodes are one row; any other report is one
row, "this machine". Every text is escaped (html.escape after the control characters are made
visible), so a name from a report cannot add markup.
"""
from __future__ import annotations

import html
from typing import Any

from rcompat.model import Report, Status
from rcompat.renderers.escape import one_line, printable

# Status colours (also what the browser test looks for in the screenshot).
COLOURS = {"ok": "#2e7d32", "warn": "#f9a825", "fail": "#c62828", "skip": "#90a4ae", "error": "#6a1b9a",
           "absent": "#ffffff"}
_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#212121}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.5em}
table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #bdbdbd;padding:.25em .5em;text-align:left;vertical-align:top;font-size:.85em}
table.grid td.cell{width:1.6em;min-width:1.6em;height:1.6em;padding:0}
table.grid th.id{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap;font-weight:normal}
.legend span{display:inline-block;padding:.1em .6em;margin-right:.4em;color:#fff;border-radius:.2em}
pre{white-space:pre-wrap;margin:.2em 0}
""" + "".join(f"td.s-{name},.legend .s-{name}{{background:{colour}}}\n" for name, colour in COLOURS.items())


def _e(text: Any) -> str:
    return html.escape(one_line(text))


def _block(text: Any) -> str:
    return html.escape(printable(text))


def render_html(report: Report, **_: object) -> str:
    fleet = report.facts.get("fleet") if isinstance(report.facts, dict) else None
    if isinstance(fleet, dict) and fleet.get("groups") is not None:
        ids = [row["id"] for row in fleet.get("findings", [])]
        rows = [(g["nodes"], g["count"], g["statuses"]) for g in fleet["groups"]]
        nodes = fleet.get("nodes", {})
        heading = f"{nodes.get('count', 0)} nodes: {nodes.get('hostlist', '')}"
        differences = fleet.get("differences", [])
    else:
        ids = [f.id for f in report.findings]
        rows = [("this machine", 1, {f.id: f.status.value for f in report.findings})]
        heading = "one machine"
        differences = []
    counts = ", ".join(f"{n} {s}" for s, n in report.counts().items() if n) or "no findings"
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
           f"<title>rcompat {_e(report.command)}</title><style>{_CSS}</style></head><body>",
           f"<h1>rcompat {_e(report.command)} — {_e(report.generated_at)}</h1>",
           f"<p>{_e(heading)}; findings: {_e(counts)}</p>",
           '<p class="legend">' + "".join(f'<span class="s-{s}">{s}</span>' for s in COLOURS if s != "absent")
           + '<span class="s-absent" style="color:#212121;border:1px solid #bdbdbd">not reported</span></p>',
           "<h2>Status by node</h2>", _grid(ids, rows)]
    if differences:
        out += ["<h2>Facts that differ</h2>", _differences(differences)]
    out += ["<h2>Findings</h2>", _findings(report), "</body></html>"]
    return "\n".join(out) + "\n"


def _grid(ids: list[str], rows: list[tuple[str, int, dict[str, str]]]) -> str:
    head = "<tr><th>nodes</th><th>count</th>" + "".join(f'<th class="id">{_e(i)}</th>' for i in ids) + "</tr>"
    body = []
    for nodes, count, statuses in rows:
        cells = []
        for fid in ids:
            status = statuses.get(fid, "absent")
            status = status if status in COLOURS else "absent"
            cells.append(f'<td class="cell s-{status}" title="{_e(fid)}: {_e(status)}"></td>')
        body.append(f"<tr><td>{_e(nodes)}</td><td>{int(count)}</td>{''.join(cells)}</tr>")
    return '<table class="grid">' + head + "".join(body) + "</table>"


def _differences(differences: list[dict[str, Any]]) -> str:
    rows = ["<tr><th>fact</th><th>must agree</th><th>majority</th><th>outliers</th></tr>"]
    for d in differences:
        majority = d.get("majority", {})
        outliers = "<br>".join(f"{_e(o.get('nodes'))}: {_e(o.get('value'))}" for o in d.get("outliers", []))
        status = "fail" if d.get("must_agree") else "warn"
        rows.append(f'<tr><td class="s-{status}" style="color:#fff">{_e(d.get("label"))}</td>'
                    f"<td>{'yes' if d.get('must_agree') else 'no'}</td>"
                    f"<td>{_e(majority.get('value'))} ({int(majority.get('count', 0))} nodes)</td><td>{outliers}</td></tr>")
    return "<table>" + "".join(rows) + "</table>"


def _findings(report: Report) -> str:
    rows = ["<tr><th>status</th><th>id</th><th>area</th><th>title and message</th></tr>"]
    for f in report.findings:
        detail = f"<pre>{_block(f.message)}</pre>" if f.message and f.status is not Status.OK else ""
        remedy = f"<pre>fix: {_block(f.remedy)}</pre>" if f.remedy else ""
        rows.append(f'<tr><td class="s-{f.status.value}" style="color:#fff">{f.status.value}</td>'
                    f"<td>{_e(f.id)}</td><td>{_e(f.area)}</td><td>{_e(f.title)}{detail}{remedy}</td></tr>")
    return "<table>" + "".join(rows) + "</table>"
