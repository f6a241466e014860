"""`rcompat parity record`: run the suite in an isolated child and write one parity record (.npz).

The parent makes (or reuses) the inputs, hands them to a child in a private work directory, lets the
child save each output there as soon as it is computed, and assembles inputs + outputs + manifest into
the record, written atomically. The child is `python -m rcompat.parity.child` (this interpreter, or
`--python`) or `Rscript rcompat/r_scripts/parity.R` (`--side r`, see rcompat.parity.rside). A child that
crashes or hangs costs the cases it had not finished, each recorded as an error naming how it ended;
the cases before it are kept.
"""
from __future__ import annotations

import datetime as dt
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rcompat.errors import RcompatError, UsageError
from rcompat.isolate import ChildResult
from rcompat.parity.npzfile import FORMAT, FORMAT_VERSION, STORAGE_DTYPE, ParityRecord, read_record, write_record

CHILD_MODULE = "rcompat.parity.child"


@dataclass
class RecordOptions:
    output: str
    seed: int | None = None          # None: suite.DEFAULT_SEED, or the seed of inputs_from
    inputs_from: str | None = None   # another record whose inputs are reused
    device: str = "cpu"
    threads: int = 0                 # 0: torch's default
    side: str = "python"
    python: str | None = None        # another interpreter for the python side
    rscript: str | None = None       # Rscript for the r side (default: R_HOME's, else PATH's)
    cases: str | None = None         # a user's cases file (python side)
    timeout: float = 600.0


def record(options: RecordOptions, progress=None) -> ParityRecord:
    """Run the suite as `options` say and write the record to `options.output`; returns it."""
    from rcompat import __version__
    from rcompat.parity.suite import DEFAULT_SEED, generate_inputs

    if options.inputs_from:
        source = read_record(options.inputs_from)
        if not source.inputs:
            raise UsageError(f"--inputs {options.inputs_from}: the record holds no inputs")
        inputs, seed = source.inputs, source.manifest.get("seed")
    else:
        seed = DEFAULT_SEED if options.seed is None else options.seed
        inputs = generate_inputs(seed)
    work = Path(tempfile.mkdtemp(prefix="rcompat-parity-"))
    try:
        result = _run_side(options, inputs, work, progress)
        facts = next((r["facts"] for r in result.records if isinstance(r.get("facts"), dict)), {})
        if "cudnn_version" in facts:  # the child's raw integer, decoded as `rcompat cuda` shows it (9.1.0)
            from rcompat.cuda.torch_probe import decode_cudnn_version

            facts["cudnn_version"] = decode_cudnn_version(facts["cudnn_version"])
        cases = _case_table(result, options)
        outputs = _load_outputs(work / "out", cases)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    manifest = {"format": FORMAT, "format_version": FORMAT_VERSION, "rcompat_version": __version__,
                "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
                "seed": seed, "inputs_from": options.inputs_from, "side": options.side,
                "device": options.device, **facts, "cases": cases,
                "precisions": sorted({p for case in cases.values() for p in case["outputs"].values()}),
                "child": {"end": "completed" if result.ok else result.describe_end(),
                          "duration_s": round(result.duration_s, 2),
                          **({} if result.ok else {"last_step": result.last_step, "output_tail": result.tail()})}}
    if "interpreter" not in manifest:  # the child died before it could say who it was
        manifest["interpreter"] = result.argv[0]
    rec = ParityRecord(manifest=manifest, inputs=inputs, outputs=outputs, path=options.output)
    write_record(options.output, rec)
    return rec


def _run_side(options: RecordOptions, inputs: dict, work: Path, progress) -> ChildResult:
    """The child's result; a child that could not run at all ({"fatal": …}) is an error."""
    if options.side == "r":
        from rcompat.parity.rside import run_r_side

        result = _with_progress(lambda: run_r_side(options, inputs, work), work, progress)
        prefix = "R side: "
    else:
        import numpy as np

        from rcompat.isolate import run_python_child

        with open(work / "inputs.npz", "wb") as fh:
            np.savez(fh, **inputs)
        args = [str(work), "--device", options.device, "--threads", str(options.threads)]
        if options.cases:
            args += ["--cases", str(Path(options.cases).resolve())]
        result = _with_progress(lambda: run_python_child(CHILD_MODULE, args, timeout=options.timeout,
                                                         python=options.python), work, progress)
        prefix = ""
    fatal = next((r["fatal"] for r in result.records if "fatal" in r), None)
    if fatal:
        raise RcompatError(f"{prefix}{fatal}")
    if not result.records:  # it never said a word of the suite's protocol: not the interpreter the suite needs
        what = "--rscript" if options.side == "r" else "--python" if options.python else "the interpreter"
        tail = " ".join(result.tail(3).split())
        raise RcompatError(f"{prefix}{what} {result.argv[0]} did not run the parity child: it "
                           f"{result.describe_end()}{': ' + tail[:300] if tail else ''}")
    return result


def _with_progress(run, work: Path, progress) -> ChildResult:
    """Run the child here while the progress line shows the case it names in WORKDIR/progress."""
    from rcompat.progress import showing_file

    return showing_file(run, work / "progress", progress)


def _case_table(result: ChildResult, options: RecordOptions) -> dict[str, dict[str, Any]]:
    """Case id -> {status, message, outputs}; planned cases with no report from the child are errors
    that say how the child ended (the one it was running when it died is named as such)."""
    from rcompat.parity.suite import planned_cases

    cases: dict[str, dict[str, Any]] = {}
    for rec in result.records:
        if "case" in rec and rec.get("status") in ("ok", "error", "skip"):
            entry = {"status": rec["status"], "outputs": rec.get("outputs") or {}}
            if rec.get("message"):
                entry["message"] = str(rec["message"])
            cases[str(rec["case"])] = entry
    if result.ok and any(r.get("done") for r in result.records):
        missing_why = "the child reported no result for this case"
    else:
        missing_why = f"not run: the child {result.describe_end()}"
    last = result.last_step
    for cid, _, _ in planned_cases():
        if cid not in cases:
            why = f"the child {result.describe_end()} while running this case" if cid == last else missing_why
            cases[cid] = {"status": "error", "message": why, "outputs": {}}
    if last and last not in cases and not result.ok:  # a user case it died in
        cases[last] = {"status": "error", "message": f"the child {result.describe_end()} while running this case",
                       "outputs": {}}
    return cases


def _load_outputs(out_dir: Path, cases: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """The arrays the child saved, in the dtype of their precision (R hands back float64 for float32)."""
    import numpy as np

    outputs = {}
    for case in cases.values():
        loaded = {}
        try:
            for name, precision in case.get("outputs", {}).items():
                array = np.load(out_dir / f"{name}.npy", allow_pickle=False)
                loaded[name] = array.astype(STORAGE_DTYPE.get(precision, array.dtype), copy=False)
        except (OSError, ValueError) as exc:
            case.update(status="error", outputs={}, message=f"an output is unreadable: {exc}")
            continue
        outputs.update(loaded)
    return outputs


def counts(rec: ParityRecord) -> dict[str, int]:
    out = {"ok": 0, "error": 0, "skip": 0}
    for case in rec.manifest["cases"].values():
        out[case["status"]] = out.get(case["status"], 0) + 1
    return out


def summary_text(rec: ParityRecord, verbose: bool = False) -> str:
    """What `record` prints: where the file went, the environment, one line per case not ok."""
    from rcompat.parity.npzfile import describe_side

    m = rec.manifest
    lines = [f"rcompat parity record: wrote {rec.path}",
             f"  {describe_side(m)} ({m.get('device_name') or 'no device'}), seed {m.get('seed')}, "
             f"interpreter {m.get('interpreter')}"]
    if m["child"]["end"] != "completed":
        tail = (m["child"].get("output_tail") or "").splitlines()[-6:]
        lines.append(f"  the child {m['child']['end']}" + ("; its last output:" if tail else " (no output)"))
        lines += ["    " + line for line in tail]
    for cid, case in m["cases"].items():
        if verbose:
            detail = case.get("message") or ", ".join(case.get("outputs", {}))
            lines.append(f"  {case['status'].upper():5} {cid:24} {detail}")
    if not verbose:  # errors only, one line per distinct message
        by_message: dict[str, list[str]] = {}
        for cid, case in m["cases"].items():
            if case["status"] == "error":
                by_message.setdefault(case.get("message") or "no message", []).append(cid)
        for message, ids in by_message.items():
            names = ids[0] if len(ids) == 1 else f"{len(ids)} cases ({', '.join(ids[:3])}{', …' if len(ids) > 3 else ''})"
            lines.append(f"  ERROR {names}: {message}")
    c = counts(rec)
    skipped = {case.get("message") for case in m["cases"].values() if case["status"] == "skip"}
    lines.append(f"summary: {c['ok']} ok, {c['error']} error, {c['skip']} skip ({len(rec.outputs)} outputs)"
                 + (f"; skipped: {'; '.join(sorted(s for s in skipped if s))}" if skipped else ""))
    return "\n".join(lines) + "\n"
