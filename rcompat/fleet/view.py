"""The aggregated fleet as a Report: per finding id its status on each node (the minority named), per
fact that differs the majority value and the outliers, nodes written as Slurm hostlists. The findings
render through every renderer; `facts["fleet"]` holds the node x finding grid for JSON and HTML."""
from __future__ import annotations

from typing import Any

from rcompat.fleet.aggregate import ABSENT, Aggregator, shown, value_key
from rcompat.fleet.facts_table import lookup, path_text
from rcompat.fleet.hostlist import IndexedHostlist
from rcompat.fleet.nodeset import NodeSet, union
from rcompat.model import SEVERITY, Finding, Report, Status

AREA = "fleet"
NOT_REPORTED = "absent"  # a node whose report has no finding of this id (the grid's empty cell)


def fleet_report(agg: Aggregator, command: str = "fleet report") -> Report:
    names = agg.nodes
    if not names:
        return Report(command=command)

    writer = IndexedHostlist(names)  # names are in natural order: the reader sorted them

    def hostlist(nodes: NodeSet) -> str:
        return writer.write(nodes.ranges)

    everyone = NodeSet([(0, len(names))])
    per_id: dict[str, dict[str, list[NodeSet]]] = {}
    groups = []
    for signature, nodes in sorted(agg.groups.items(), key=lambda item: item[1].first()):
        statuses = dict(signature)
        groups.append({"nodes": hostlist(nodes), "count": len(nodes), "statuses": statuses})
        for fid, status in statuses.items():
            per_id.setdefault(fid, {}).setdefault(status, []).append(nodes)
    report = Report(command=command)
    rows = []
    for fid, (area, title) in agg.findings.items():
        by_status = {status: union(sets) for status, sets in per_id.get(fid, {}).items()}
        missing = everyone.minus(union(by_status.values()))
        if len(missing):
            by_status[NOT_REPORTED] = missing
        rows.append(_finding_row(fid, area, title, by_status, agg, names, hostlist))
        report.add(_finding(rows[-1], len(names)))
    differences = [_difference(path, values, agg, hostlist) for path, values in
                   sorted(agg.differences.items(), key=lambda item: path_text(item[0]))]
    differences = [d for d in differences if d is not None]
    report.add(_difference_finding(d) for d in differences)
    report.facts["fleet"] = {
        "nodes": {"count": len(names), "hostlist": hostlist(everyone)},
        "groups": groups, "findings": rows, "differences": differences,
    }
    return report


def _finding_row(fid, area, title, by_status, agg, names, hostlist) -> dict[str, Any]:
    ordered = sorted(by_status.items(), key=lambda item: (-len(item[1]), item[0]))
    majority = ordered[0][0]
    out = {"id": fid, "area": area, "title": title, "majority": majority, "by_status": {}}
    for status, nodes in ordered:
        example = agg.examples.get((fid, status))
        out["by_status"][status] = {"count": len(nodes), "nodes": hostlist(nodes),
                                    "title": example.title if example else "",
                                    "message": example.message if example else "",
                                    "example_node": names[example.node] if example else None}
    return out


def _worst(statuses) -> Status:
    known = [Status(s) for s in statuses if s in Status._value2member_map_]
    return max(known, key=SEVERITY.get, default=Status.SKIP)


def _finding(row: dict[str, Any], total: int) -> Finding:
    by_status = row["by_status"]
    status = _worst(by_status)
    if len(by_status) == 1:
        only = next(iter(by_status.values()))
        title = f"{row['majority']} on all {total} nodes: {only['title'] or row['title']}"
        message = only["message"] if status in (Status.WARN, Status.FAIL, Status.ERROR) else ""
    else:
        parts = [f"{s} on {v['nodes']}" for s, v in by_status.items() if s != row["majority"]]
        majority = by_status[row["majority"]]
        title = "; ".join(parts) + f"; {row['majority']} on the other {majority['count']} node(s)"
        message = "\n".join(f"{v['example_node']} ({s}): {v['title']}" + (f" — {v['message']}" if v["message"] else "")
                            for s, v in by_status.items() if s != NOT_REPORTED)
    return Finding(id=row["id"], area=row["area"] or AREA, status=status, title=title, message=message,
                   evidence={s: {"nodes": v["nodes"], "count": v["count"]} for s, v in by_status.items()})


def _difference(path, values, agg: Aggregator, hostlist) -> dict[str, Any] | None:
    area = path[0]
    nodes = agg.area_nodes[area]
    named = agg.table.name_of(path)
    try:
        reference_value = lookup(agg.reference[area], path[1:])
    except KeyError:
        reference_value = ABSENT
    if values.varied is not None:
        recorded = {"(more than one value each)": values.varied}
    else:
        recorded = dict(values.values)
    reference_nodes = nodes.minus(union(recorded.values()))
    sets: dict[Any, NodeSet] = {}
    for value, ns in [(value_key(reference_value), reference_nodes), *recorded.items()]:
        if len(ns):
            sets[value] = union([sets[value], ns]) if value in sets else ns
    if len(sets) < 2:
        return None
    ordered = sorted(sets.items(), key=lambda item: (-len(item[1]), shown(item[0])))
    majority_value, majority_nodes = ordered[0]
    return {
        "path": path_text(path), "label": named.describe(path) if named else path_text(path),
        "name": named.name if named else None, "must_agree": bool(named and named.must_agree),
        "source": named.source if named else "",
        "majority": {"value": shown(majority_value), "count": len(majority_nodes), "nodes": hostlist(majority_nodes)},
        "outliers": [{"value": shown(v), "count": len(ns), "nodes": hostlist(ns)} for v, ns in ordered[1:]],
    }


def _difference_finding(diff: dict[str, Any]) -> Finding:
    outliers = "; ".join(f"{o['nodes']}: {diff['label']} {o['value']}" for o in diff["outliers"])
    majority = diff["majority"]
    title = f"{outliers}; the other {majority['count']} node(s): {majority['value']}"
    status = Status.FAIL if diff["must_agree"] else Status.WARN
    remedy = ("Make this agree on every node (or take the outliers out of the partition) before jobs "
              "spread over them." if diff["must_agree"] else "")
    return Finding(id=f"FACT:{diff['path']}", area="fleet-facts", status=status, title=title, remedy=remedy,
                   evidence={"majority": majority, "outliers": diff["outliers"]}, source=diff["source"])
