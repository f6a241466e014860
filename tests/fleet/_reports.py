"""Real node reports for the fleet tests and the benchmark: one doctor report made here, then varied
the way nodes of a cluster differ (another driver, R library first, a failing check)."""
from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


def doctor_report(areas: tuple[str, ...] = ("system", "python"), timeout: float = 300) -> dict[str, Any]:
    argv = [sys.executable, "-m", "rcompat", "doctor", "--format", "json", "--quiet"]
    for area in areas:
        argv += ["--only", area]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=str(REPO))
    assert out.returncode in (0, 1), out.stderr
    return json.loads(out.stdout)


def varied(base: dict[str, Any], node: int, *, odd_driver: set[int] = frozenset(),
           odd_lib: set[int] = frozenset(), failing: set[int] = frozenset()) -> dict[str, Any]:
    """`base` as node number `node` would report it: its own timings, and, where asked, an older NVIDIA
    driver, an extra directory first on R's library path, a failing first finding."""
    report = copy.deepcopy(base)
    facts = report["facts"]
    facts.setdefault("timings_s", {})["system"] = 0.05 + (node % 7) / 100  # differs on every node; ignored
    nvml = facts.setdefault("cuda", {}).setdefault("nvml", {})
    nvml["driver_version"] = "535.104.05" if node in odd_driver else "550.54.14"
    nvml["gpus"] = [{"name": "NVIDIA H100", "uuid": f"GPU-{node:08x}"}]  # unique per node; ignored
    if node in odd_lib:
        facts.setdefault("r", {})["lib_paths"] = ["/opt/odd/R", "/usr/lib/R/library"]
    else:
        facts.setdefault("r", {})["lib_paths"] = ["/usr/lib/R/library"]
    if node in failing:
        first = report["findings"][0]
        first["status"] = "fail"
        first["title"] = "broken on this node"
        first["message"] = f"node {node} fails"
    return report


def write_fleet(directory: Path, base: dict[str, Any], count: int, prefix: str = "n", **odd) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for node in range(1, count + 1):
        path = directory / f"{prefix}{node}.json"
        path.write_text(json.dumps(varied(base, node, **odd), indent=2))
        paths.append(path)
    return paths
