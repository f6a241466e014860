"""The race area of `rcompat doctor`: kept to a few seconds.

Two checks: the memory map of the doctor's own process (instant; by the time this area runs, the r
area may have embedded R here), and ONE short serialized CPU trial (2 workers x 4 iterations, about
2 s, bounded by the doctor timeout) that shows the recommended pattern works with this R and torch;
a trial that passed is kept between runs while R, rpy2, numpy and torch stay the same
(rcompat.race.trial_cache).
The unsafe mode is not run here: it crashes by design and is for `rcompat race`.
"""
from __future__ import annotations

import importlib.util
from typing import Iterable

from rcompat.model import Finding, Status

AREA = "race"
TITLE = "R and Python in one process: races and the address space"
DOCTOR_TRIAL = {"device": "cpu", "iterations": 4, "workers": 2, "mode": "serialized", "trials": 1, "seed": 1,
                "overlap_setup": True}
DOCTOR_TRIAL_TIMEOUT_S = 20.0
R_FACT_READERS = ("r", "cuda", "elf")  # the areas that read R's facts


def own_maps(ctx) -> dict:
    """The doctor's own memory map, read once: a START fact, so it is read at the start of the run, as
    when this area's first check ran first, before the elf area's reading maps libraries into this
    process (files mapped to be read, which the map would count as loaded)."""
    from rcompat.race.mapscheck import maps_facts

    return ctx.memo("race.maps", maps_facts)


def check_own_maps(ctx) -> Iterable[Finding]:
    from rcompat.race.mapscheck import findings

    facts = own_maps(ctx)
    ctx.facts.setdefault(AREA, {})["maps"] = {k: facts[k] for k in ("source", "regions", "gpu_roles", "r_loaded",
                                                                    "mmap_min_addr", "duplicates", "neighbours")}
    return findings(facts, facts["source"])


def check_serialized_trial(ctx) -> Iterable[Finding]:
    from rcompat.r.rpy2_fit import rpy2_rows

    missing = _trial_needs()
    if missing:
        return [Finding(id="RACE-SERIALIZED", area=AREA, status=Status.SKIP,
                        title=f"race trial not run: {', '.join(missing)} not installed",
                        message="The trial embeds R through rpy2 next to Python torch.",
                        remedy="pip install torch and the rpy2 that fits your R: "
                               + "; ".join(f"R {row['R']}: {row['pip']}" for row in rpy2_rows()),
                        source="issue 8; rpy2 pairing: the [[rpy2]] rows of rcompat/data/r_rules.toml")]
    findings, facts, _ = doctor_trial(ctx)
    ctx.facts.setdefault(AREA, {})["serialized_trial"] = facts
    return findings


def _trial_needs() -> list[str]:
    """What the trial needs and is not installed (it embeds R through rpy2 next to Python torch)."""
    return [m for m in ("rpy2", "torch") if importlib.util.find_spec(m) is None]


def trial_if_it_runs(ctx) -> None:
    """The doctor's trial, when check_serialized_trial will ask for it: the run's longest child,
    started first (rcompat.areas.start_early)."""
    if not _trial_needs():
        doctor_trial(ctx)


def doctor_trial(ctx) -> tuple[list[Finding], dict, dict | None]:
    """(findings, facts, torch's facts or None) of the doctor's one trial, run once per doctor run
    (or read from rcompat.race.trial_cache). When the cuda area is in the run too, the trial's child,
    having imported torch for the trial, also reports what the torch child would, once its trial has
    ended (rcompat.race.runner.run(torch_facts=True)): one torch start serves both areas. When R's
    facts are wanted too (the r, cuda or elf area), it reports what the r area's rpy2 worker would
    (run(r_facts=…)): one rpy2 and R start serves them."""
    def produce() -> tuple[list[Finding], dict, dict | None]:
        from rcompat.race.trial_cache import cached_trial

        shared: dict = {}

        def trial() -> tuple[list[Finding], dict]:
            from rcompat.race.runner import run

            result = run(**DOCTOR_TRIAL, timeout=min(float(ctx.timeout), DOCTOR_TRIAL_TIMEOUT_S),
                         torch_facts="cuda" in ctx.areas, r_facts=_r_facts_script(ctx))
            if result.torch_facts is not None:
                shared.update(record=result.torch_facts, duration_s=result.torch_duration_s)
            if result.r_facts is not None:
                shared["r_facts"] = result.r_facts
            return result.to_findings(), {"config": result.config, "summary": result.summary("serialized")}

        findings, facts = cached_trial(DOCTOR_TRIAL, trial)
        return findings, facts, shared or None

    return ctx.memo("race.trial", produce)


def _r_facts_script(ctx) -> str | None:
    """r_facts.R, when an area of this run reads R's facts (rcompat.r.checks.shared_r_facts) through
    rpy2 in R's own library paths: what the trial's child can answer for (it gets no R_LIBS)."""
    from rcompat.r.scripts import scripts_dir

    if not set(R_FACT_READERS) & set(ctx.areas) or ctx.options.get("r_lib_paths") \
            or ctx.options.get("r_engine", "auto") == "rscript":
        return None
    return str(scripts_dir() / "r_facts.R")


def trial_r_facts(ctx) -> dict | None:
    """What the race trial's child said of R ({"core", "rpy2_mode"}), when this run's race area runs
    its trial now with rpy2 and torch installed and that child could tell; else None, and the r area
    starts its own rpy2 worker."""
    if "race" not in ctx.areas or _trial_needs():
        return None
    shared = doctor_trial(ctx)[2]
    return (shared or {}).get("r_facts")


def trial_torch_facts(ctx) -> dict | None:
    """What the race trial's child said of torch ({"record", "duration_s"}), when this doctor run has a
    race area that runs its trial now (not from the cache) with rpy2 and torch installed; else None at
    once, and the cuda area asks its own torch child."""
    if "race" not in ctx.areas or _trial_needs():
        return None
    return doctor_trial(ctx)[2]


check_own_maps.check_id = "RACE-MAPS"
check_serialized_trial.check_id = "RACE-SERIALIZED"
CHECKS = [check_own_maps, check_serialized_trial]
own_maps.in_process = True  # type: ignore[attr-defined]  # no child: never the critical path
START = (trial_if_it_runs, own_maps)
