"""`rcompat ci matrix`: the cartesian product of R × torch × CUDA (× keras × os) minus the cells the R
breakage rules and the CUDA compatibility tables mark broken.

Output is GitHub Actions `strategy.matrix` JSON in the `{"include": [...]}` form: every surviving cell
is one object, so `matrix: ${{ fromJSON(needs.plan.outputs.matrix) }}` gets exactly the cells to run
and nothing needs an `exclude` list that could drift from the product. Each cell is
`{"r": "4.4", "torch": "0.13.0", "cuda": "cpu"}` (plus "keras"/"os" when given).

A cell is excluded when a rule or table row of status `fail`, at least as confident as
`--min-confidence` (default medium), fires on it. Every other cell runs, and each thing said about it
is a note in the JSON format's `notes` (and a line on stderr beside the github format): a `warn`, a
`fail` kept because its claim is less confident than `--min-confidence` (a low-confidence row never
removes a cell silently), and a layer no table could judge (`skip`: e.g. an R torch release the CUDA
tables do not list yet), so a cell kept without a verdict says so and why.
"""
from __future__ import annotations

import itertools
import json
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from rcompat.errors import UsageError
from rcompat.model import Finding, Status
from rcompat.tools.engines import CONFIDENCE_ORDER, DEFAULT_MIN_CONFIDENCE, confident
from rcompat.versions import Version, shown

CPU = "cpu"
# Cell key -> the component name the R rules use. "cuda" is judged by the CUDA tables instead.
R_RULE_COMPONENTS = {"r": "R", "torch": "torch", "keras": "keras", "keras3": "keras3",
                     "tensorflow": "tensorflow", "os": "os"}
DIMENSION_ORDER = ("r", "torch", "cuda", "keras", "keras3", "tensorflow", "os")
# GitHub Actions runs at most 256 jobs per matrix; a product far beyond that is a mistake, and
# evaluating 10^5 cells takes minutes, so it is refused before any cell is judged.
MAX_CELLS = 10_000


@dataclass
class Exclusion:
    cell: dict[str, str]
    reasons: list[dict[str, Any]]

    def to_dict(self) -> dict[str, Any]:
        return {"cell": self.cell, "reasons": self.reasons}


@dataclass
class Plan:
    dimensions: dict[str, list[str]]
    include: list[dict[str, str]] = field(default_factory=list)
    excluded: list[Exclusion] = field(default_factory=list)
    notes: list[dict[str, Any]] = field(default_factory=list)  # warn/skip that did not exclude
    engines: dict[str, str] = field(default_factory=dict)      # engine -> "used" or why it was not

    def github(self) -> dict[str, Any]:
        return {"include": self.include}

    def to_dict(self) -> dict[str, Any]:
        return {"include": self.include, "excluded": [e.to_dict() for e in self.excluded],
                "notes": self.notes, "dimensions": self.dimensions, "engines": self.engines,
                "counts": {"product": len(self.include) + len(self.excluded), "include": len(self.include),
                           "excluded": len(self.excluded)}}


def parse_list(text: str | None, name: str, allow_cpu: bool = False) -> list[str]:
    """`"4.3, 4.4"` -> ["4.3", "4.4"]; every item must be a version (or `cpu` where allowed)."""
    if text is None:
        return []
    items = [t.strip() for t in text.split(",") if t.strip()]
    if not items:
        raise UsageError(f"--{name} needs at least one value")
    for item in items:
        if allow_cpu and item.lower() == CPU:
            continue
        if name == "os":
            if item.lower() not in ("linux", "windows", "macos"):
                raise UsageError(f"--os: {item!r} is not one of linux, windows, macos")
            continue
        try:
            Version.parse(item)
        except ValueError:
            raise UsageError(f"--{name}: {shown(item)} is not a version") from None
    seen: dict[str, None] = {}
    for item in items:
        seen.setdefault(item.lower() if item.lower() == CPU else item, None)
    return list(seen)


def plan_matrix(dimensions: dict[str, Sequence[str]], rules_path: str | None = None,
                cuda_tables: str | None = None, min_confidence: str = DEFAULT_MIN_CONFIDENCE) -> Plan:
    """Evaluate every cell of the product of `dimensions` ({"r": [...], "torch": [...], "cuda": [...]})."""
    from rcompat.tools.engines import load_r_rules

    if min_confidence not in CONFIDENCE_ORDER:
        raise UsageError(f"--min-confidence: choose from {', '.join(CONFIDENCE_ORDER)}")
    dims = {k: list(dimensions[k]) for k in DIMENSION_ORDER if dimensions.get(k)}
    if not dims:
        raise UsageError("give at least one dimension (--r, --torch, --cuda, …)")
    cells = 1
    for values in dims.values():
        cells *= len(values)
    if cells > MAX_CELLS:
        raise UsageError(f"the product has {cells} cells, more than {MAX_CELLS} (GitHub Actions runs at most "
                         "256 jobs per matrix): give fewer versions")
    plan = Plan(dimensions=dims)
    rules = load_r_rules(rules_path)
    plan.engines["r_rules"] = f"used: {rules_path or 'rcompat/data/r_rules.toml'}"
    plan.engines.setdefault("cuda_tables", "not needed: no --cuda other than cpu"
                            if not any(c != CPU for c in dims.get("cuda", [])) else "used")
    tables = None
    if "torch" in dims and any(c != CPU for c in dims.get("cuda", [])):  # some cell is judged by them
        from rcompat.cuda.tables import load_tables

        tables = load_tables(cuda_tables)  # once, not once per cell
    keys = list(dims)
    for values in itertools.product(*(dims[k] for k in keys)):
        cell = dict(zip(keys, values))
        findings = _rule_findings(cell, rules) + _cuda_findings(cell, tables)
        blocking = [f for f in findings if f.status is Status.FAIL and confident(f, min_confidence)]
        if blocking:
            plan.excluded.append(Exclusion(cell, [_reason(f) for f in blocking]))
            continue
        plan.include.append(cell)
        for f in findings:
            if f.status is Status.FAIL:
                note = (f"kept: a {f.confidence or 'unverified'}-confidence claim, below --min-confidence "
                        f"{min_confidence}")
            elif f.status is Status.WARN:
                note = "runs, with this warning"
            elif f.status in (Status.SKIP, Status.ERROR):
                note = f"not judged: {f.message or f.title}"
            else:
                continue
            plan.notes.append({"cell": cell, **_reason(f), "note": note})
    return plan


def _rule_findings(cell: dict[str, str], rules: Any) -> list[Finding]:
    from rcompat.tools.engines import r_rule_findings

    stack = {R_RULE_COMPONENTS[k]: v for k, v in cell.items() if k in R_RULE_COMPONENTS}
    return r_rule_findings(stack, rules, area="ci")


def _cuda_findings(cell: dict[str, str], tables: Any) -> list[Finding]:
    from rcompat.tools.engines import cuda_layer_findings

    cuda = cell.get("cuda")
    if not cuda or cuda == CPU or "torch" not in cell:
        return []
    return cuda_layer_findings({"rtorch": cell["torch"], "cuda": cuda}, tables)


def _reason(finding: Finding) -> dict[str, Any]:
    return {"id": finding.id, "status": finding.status.value, "reason": finding.title,
            "source": finding.source, "confidence": finding.confidence}


def add_parity_steps(plan: Plan, baseline: str) -> None:
    """Give each cell the two commands of its parity step: record R torch's results on the baseline's
    inputs, then compare them with the committed baseline. In the cell, not beside the matrix, because
    every key next to `include` would become a matrix dimension of its own in GitHub Actions."""
    import shlex

    if not baseline.strip():
        raise UsageError("--parity-baseline needs the path of a committed parity record")
    quoted = shlex.quote(baseline)
    for cell in plan.include:
        device = "cpu" if cell.get("cuda", CPU) == CPU else "cuda"
        name = "parity-" + "-".join(f"{k}{v}" if k != "cuda" or v != CPU else v for k, v in cell.items()) + ".npz"
        cell["parity_record"] = (f"rcompat parity record --side r --device {device} --inputs {quoted} "
                                 f"--output {name}")
        cell["parity_compare"] = f"rcompat parity compare {quoted} {name}"


def add_soak_steps(plan: Plan, cases: str, iterations: int = 200) -> None:
    """Give each cell a soak command: the maintainer's R workload run `iterations` times on the cell's
    device, a JUnit report that fails the job on a leak (docs/soak.md). In the cell, as the parity
    steps are, so it does not become a matrix dimension."""
    import shlex

    if not cases.strip():
        raise UsageError("--soak-cases needs the path of an R file defining soak_iteration(i)")
    quoted = shlex.quote(cases)
    for cell in plan.include:
        device = "cpu" if cell.get("cuda", CPU) == CPU else "cuda"
        name = "soak-" + "-".join(f"{k}{v}" if k != "cuda" or v != CPU else v for k, v in cell.items()
                                  if k in DIMENSION_ORDER) + ".xml"
        cell["soak"] = (f"rcompat soak --side r --device {device} --cases {quoted} --iterations {iterations} "
                        f"--format junit --output {name}")


def render(plan: Plan, fmt: str) -> str:
    if fmt == "github":
        return json.dumps(plan.github(), separators=(",", ":")) + "\n"
    if fmt == "json":
        return json.dumps(plan.to_dict(), indent=2) + "\n"
    raise UsageError(f"unknown format {fmt!r}; choose github or json")


def describe_exclusions(plan: Plan) -> Iterable[str]:
    """One line per excluded cell, then one per note, for stderr next to the compact github output
    (CI logs)."""
    for e in plan.excluded:
        cell = " ".join(f"{k}={v}" for k, v in e.cell.items())
        why = "; ".join(f"{r['id']}: {r['reason']} [{r['confidence'] or 'no confidence'}]" for r in e.reasons)
        yield f"rcompat: excluded {cell}: {why}"
    for n in plan.notes:
        cell = " ".join(f"{k}={v}" for k, v in n["cell"].items())
        yield f"rcompat: note {cell}: {n['id']}: {n['note']}"
