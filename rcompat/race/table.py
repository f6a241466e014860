"""The unsafe-vs-serialized comparison, as text or markdown, for the top of `rcompat race` output."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # pragma: no cover
    from rcompat.race.result import RaceResult


def comparison_rows(result: "RaceResult") -> tuple[list[str], list[list[str]]]:
    modes = result.modes()
    summaries = {m: result.summary(m) for m in modes}
    kinds = []
    for m in modes:
        kinds += [k for k in summaries[m]["failures_by_kind"] if k not in kinds and k != "starved"]
    rows = [["trials"] + [str(summaries[m]["trials"]) for m in modes],
            ["failed trials"] + [str(summaries[m]["failed"]) for m in modes]]
    rows += [[f"  {k}"] + [str(summaries[m]["failures_by_kind"].get(k, 0)) for m in modes] for k in kinds]
    if any(summaries[m]["starved"] for m in modes):  # no verdict: neither passed nor failed
        rows.append(["starved of CPU"] + [str(summaries[m]["starved"]) for m in modes])
    rows += [["signals"] + [", ".join(summaries[m]["signals"]) or "-" for m in modes],
             ["ops completed"] + [str(summaries[m]["ops_completed"]) for m in modes],
             ["ops failed"] + [str(summaries[m]["ops_failed"]) for m in modes],
             ["median trial s"] + [str(summaries[m]["median_trial_s"]) for m in modes]]
    return ["", *modes], rows


def render_text(result: "RaceResult") -> str:
    c = result.config
    header, rows = comparison_rows(result)
    devices = sorted({t.device for t in result.trials if t.device}) or [c["device"]]
    from rcompat.renderers.text import wrap

    lines = wrap(f"rcompat race — device {', '.join(devices)}, {c['trials']} trial(s) x {c['workers']} worker(s) "
                 f"x {c['iterations']} iteration(s), seed {c['seed']}, R stack check "
                 f"{'on' if c['r_stack_check'] else 'off'}", "", subsequent="  ")
    setup = result.setup_error()
    if setup is not None:  # no trial ran: no table of zeros that reads like a clean run (RACE-SETUP says why)
        lines.append("  not run: the trials could not start (RACE-SETUP)")
        return "\n".join(lines) + "\n\n"
    if len(header) > 1:
        widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
        for row in [header, *rows]:
            lines.append("  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip())
    for m in result.modes():
        first = result.summary(m).get("first_failure")
        if not first:
            continue
        lines.append("")
        lines.append(f"first failing interleaving ({m}, trial {first['trial']}, seed {first['seed']}):")
        for e in first["interleaving"]:
            lines.append(f"  {e['t_ms']:>10.3f} ms  {e['thread']:<11} {e['what']}")
        if first["in_flight"]:
            lines.append(f"  in flight at the end: {'; '.join(first['in_flight'])}")
        lines.append(f"  reproduce: {first['reproduce']}")
    return "\n".join(lines) + "\n\n"


def render_markdown(result: "RaceResult") -> str:
    header, rows = comparison_rows(result)
    if len(header) < 2:
        return ""
    out = ["| " + " | ".join(h or "race" for h in header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(cell.strip() for cell in row) + " |" for row in rows]
    return "\n".join(out) + "\n\n"
