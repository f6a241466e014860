"""What the NVIDIA driver says, through NVML (the `pynvml` module of nvidia-ml-py).

This is the one seam where the driver is reached: `probe_nvml(nvml)` takes the module object, so a test
on a machine without a driver passes an object with the same function names. Without one, the real
library is asked in a child process (rcompat/cuda/nvml_child.py, through rcompat.isolate): NVML is
foreign native code, and a wedged driver (mid-upgrade, a hung GPU) never returns from nvmlInit, a
broken libnvidia-ml.so.1 can crash when loaded, and in-process either would take rcompat with it;
in a child a hang is a time-out and a crash a signal, both reported as NVML errors, never as absence.

`nvmlSystemGetCudaDriverVersion_v2` is used, not v1: v1 returns a guessed version when libcuda is absent,
v2 reports LIBRARY_NOT_FOUND instead (REFERENCE.md, NVML).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Callable

NO_DRIVER_REASON = "no NVIDIA driver (libnvidia-ml.so.1 not found)"
NO_PYNVML_REASON = "pynvml is not installed: pip install nvidia-ml-py"
# Far above any real machine (a DGX has 16); a driver claiming more is wrong, and looping over its
# answer (4 billion GPUs) would never end.
MAX_GPUS = 256
DEFAULT_TIMEOUT_S = 30.0
LIBRARY = "libnvidia-ml.so.1"
REMEDY_HINT = "check the driver with `nvidia-smi`"


@dataclass
class GpuProcess:
    pid: int
    used_memory_mib: float | None
    name: str | None


@dataclass
class Gpu:
    index: int
    name: str | None = None
    uuid: str | None = None
    compute_capability: str | None = None  # "8.6"
    memory_total_mib: float | None = None
    memory_used_mib: float | None = None
    processes: list[GpuProcess] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)  # query -> NVML error text


@dataclass
class NvmlFacts:
    """status: ok | no-driver | no-pynvml | error (then `error` holds the NVML error text)."""

    status: str
    reason: str = ""
    error: str = ""
    driver_version: str | None = None
    cuda_driver_version: str | None = None  # "12.4", from the integer 12040
    gpus: list[Gpu] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def uuids(self) -> list[str]:
        return [g.uuid or f"index-{g.index}" for g in self.gpus]


def decode_cuda_driver_version(value: int) -> str:
    """12040 -> "12.4"; 11080 -> "11.8" (major = v // 1000, minor = (v % 1000) // 10)."""
    return f"{value // 1000}.{(value % 1000) // 10}"


def probe_nvml(nvml: Any = None, timeout: float | None = None) -> NvmlFacts:
    """Driver, CUDA driver version and every GPU; never raises for driver-side problems. The real
    NVML is asked in a child that is killed after `timeout` seconds; a module passed as `nvml` (a
    test's stand-in) is asked here."""
    if nvml is None:
        return probe_in_child(DEFAULT_TIMEOUT_S if timeout is None else timeout)
    return probe_in_process(nvml)


def probe_in_child(timeout: float) -> NvmlFacts:
    """Ask the real NVML in a child (rcompat/cuda/nvml_child.py) killed after `timeout` seconds."""
    import importlib.util

    if importlib.util.find_spec("pynvml") is None:
        return NvmlFacts(status="no-pynvml", reason=NO_PYNVML_REASON)
    from rcompat.isolate import run_python_child

    result = run_python_child("rcompat.cuda.nvml_child", timeout=timeout)
    for record in result.records:
        if isinstance(record.get("nvml_facts"), dict):
            try:
                return facts_from_dict(record["nvml_facts"])
            except (TypeError, ValueError, KeyError) as exc:
                return NvmlFacts(status="error", error="unreadable answer",
                                 reason=f"the NVML probe child's answer could not be read: {exc}")
    step = result.last_step or "start"
    if result.timed_out:
        error = f"timed out after {timeout:g} s in {step}"
        reason = (f"NVML did not answer: {step} timed out after {timeout:g} s (a wedged driver or a hung "
                  f"GPU); the probe was killed, {REMEDY_HINT}")
    elif result.signal_name:
        error = f"crashed with {result.signal_name} in {step}"
        reason = (f"NVML crashed the probe child with {result.signal_name} during step '{step}' "
                  f"({LIBRARY} is damaged or does not fit the kernel module); {REMEDY_HINT}")
    else:
        error = f"probe child {result.describe_end()}"
        reason = f"the NVML probe child {result.describe_end()} during step '{step}': {result.tail(3)}"
    facts = NvmlFacts(status="error", reason=reason, error=error)
    facts.errors["child"] = result.describe_end()
    return facts


def facts_from_dict(data: dict[str, Any]) -> NvmlFacts:
    gpus = []
    for raw in data.get("gpus") or []:
        procs = [GpuProcess(int(p["pid"]), p.get("used_memory_mib"), _str(p.get("name")))
                 for p in raw.get("processes") or []]
        gpus.append(Gpu(index=int(raw["index"]), name=_str(raw.get("name")), uuid=_str(raw.get("uuid")),
                        compute_capability=_str(raw.get("compute_capability")),
                        memory_total_mib=_number(raw.get("memory_total_mib")),
                        memory_used_mib=_number(raw.get("memory_used_mib")), processes=procs,
                        errors={str(k): str(v) for k, v in (raw.get("errors") or {}).items()}))
    return NvmlFacts(status=str(data["status"]), reason=str(data.get("reason") or ""),
                     error=str(data.get("error") or ""), driver_version=_str(data.get("driver_version")),
                     cuda_driver_version=_str(data.get("cuda_driver_version")), gpus=gpus,
                     errors={str(k): str(v) for k, v in (data.get("errors") or {}).items()})


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def probe_in_process(nvml: Any, step: Callable[[str], None] = lambda _: None) -> NvmlFacts:
    """probe_nvml in this very process (the child's side, and tests' stand-in modules); `step` is told
    what is about to be asked, so a child that hangs or crashes there can be reported by its step."""
    error_type = getattr(nvml, "NVMLError", Exception)
    try:
        step("nvmlInit")
        nvml.nvmlInit()
    except error_type as exc:
        if _is_library_not_found(nvml, exc):
            return NvmlFacts(status="no-driver", reason=NO_DRIVER_REASON, error=_text(exc))
        return NvmlFacts(status="error", reason=f"NVML initialisation failed: {_text(exc)}", error=_text(exc))
    try:
        step("query the driver and GPUs")
        return _query(nvml, error_type)
    finally:
        try:
            nvml.nvmlShutdown()
        except error_type:
            pass


def _query(nvml: Any, error_type: type) -> NvmlFacts:
    facts = NvmlFacts(status="ok")

    def ask(what: str, fn, *args, errors: dict[str, str] = facts.errors):
        try:
            return fn(*args)
        except error_type as exc:
            errors[what] = _text(exc)
            return None

    facts.driver_version = _str(ask("driver_version", nvml.nvmlSystemGetDriverVersion))
    if facts.driver_version is not None and not _is_version(facts.driver_version):
        facts.status, facts.error = "error", f"unreadable driver version {facts.driver_version[:80]!r}"
        facts.reason = (f"NVML reports the driver version as {facts.driver_version[:80]!r}, which is not a "
                        "version number (a damaged or mismatched libnvidia-ml.so.1)")
        facts.driver_version = None
        return facts
    cuda = ask("cuda_driver_version", nvml.nvmlSystemGetCudaDriverVersion_v2)
    facts.cuda_driver_version = decode_cuda_driver_version(int(cuda)) if cuda else None
    count = ask("device_count", nvml.nvmlDeviceGetCount)
    if count is None:
        facts.status, facts.error = "error", facts.errors["device_count"]
        facts.reason = f"NVML cannot count the GPUs: {facts.error}"
        return facts
    if int(count) > MAX_GPUS:
        facts.status, facts.error = "error", f"NVML claims {int(count)} GPUs"
        facts.reason = (f"NVML claims {int(count)} GPUs, more than the {MAX_GPUS} any machine has: the "
                        "driver's answer is wrong, and no GPU was read")
        return facts
    for index in range(int(count)):
        gpu = Gpu(index=index)
        handle = ask("handle", nvml.nvmlDeviceGetHandleByIndex, index, errors=gpu.errors)
        if handle is not None:
            _fill_gpu(nvml, handle, gpu, lambda what, fn, *a: ask(what, fn, *a, errors=gpu.errors))
        facts.gpus.append(gpu)
    return facts


def _fill_gpu(nvml: Any, handle: Any, gpu: Gpu, ask) -> None:
    gpu.name = _str(ask("name", nvml.nvmlDeviceGetName, handle))
    gpu.uuid = _str(ask("uuid", nvml.nvmlDeviceGetUUID, handle))
    cc = ask("compute_capability", nvml.nvmlDeviceGetCudaComputeCapability, handle)
    gpu.compute_capability = f"{cc[0]}.{cc[1]}" if cc else None
    memory = ask("memory", nvml.nvmlDeviceGetMemoryInfo, handle)
    if memory is not None:
        gpu.memory_total_mib = _mib(getattr(memory, "total", None))
        gpu.memory_used_mib = _mib(getattr(memory, "used", None))
    for proc in ask("processes", nvml.nvmlDeviceGetComputeRunningProcesses, handle) or []:
        pid = int(getattr(proc, "pid", 0))
        gpu.processes.append(GpuProcess(pid=pid, used_memory_mib=_mib(getattr(proc, "usedGpuMemory", None)),
                                        name=process_name(pid)))


def process_name(pid: int) -> str | None:
    """The command name of `pid` from /proc (NVML's own lookup needs more privileges in containers)."""
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as fh:
            return fh.read().strip() or None
    except OSError:
        return None


def _is_version(text: str) -> bool:
    from rcompat.versions import Version

    try:
        Version.parse(text)
    except ValueError:
        return False
    return True


def _is_library_not_found(nvml: Any, exc: BaseException) -> bool:
    code = getattr(nvml, "NVML_ERROR_LIBRARY_NOT_FOUND", 12)
    return getattr(exc, "value", None) == code or type(exc).__name__ == "NVMLError_LibraryNotFound"


def _text(exc: BaseException) -> str:
    try:
        text = str(exc)
    except Exception:  # noqa: BLE001 - pynvml's __str__ itself calls into NVML
        text = ""
    return text or f"{type(exc).__name__} (code {getattr(exc, 'value', '?')})"


def _str(value: Any) -> str | None:
    if value is None:
        return None
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def _mib(value: Any) -> float | None:
    # NVML reports bytes; a process whose usage it cannot see reports NVML_VALUE_NOT_AVAILABLE (2**64-1).
    if value is None or not isinstance(value, int) or value >= 2**63:
        return None
    return round(value / 2**20, 1)


def processes_by_kind(facts: NvmlFacts) -> dict[str, list[int]]:
    """PIDs holding a CUDA context, by the runtime they belong to ("R", "python", other names)."""
    out: dict[str, list[int]] = {}
    for gpu in facts.gpus:
        for proc in gpu.processes:
            out.setdefault(_runtime_of(proc), []).append(proc.pid)
    return out


def _runtime_of(proc: GpuProcess) -> str:
    name = (proc.name or "").lower()
    if name in ("r", "rsession", "rscript", "exec/r") or name.startswith("rsession"):
        return "R"
    if name.startswith("python"):
        return "python"
    return name or f"pid {proc.pid}"

