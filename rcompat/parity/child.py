"""Child side of `rcompat parity record`: `python -m rcompat.parity.child WORKDIR [options]`.

Runs in its own process (maybe another interpreter, `--python`), because torch can crash or hang. It
needs only torch, numpy and this rcompat on PYTHONPATH. It reads WORKDIR/inputs.npz, runs each case,
and saves each output as WORKDIR/out/<name>.npy the moment it is computed (temp file + rename), so a
crash halfway still leaves the cases before it; large arrays never travel through a pipe. It prints
JSON lines: `{"facts": …}` first, `{"step": case}` before each case, `{"case": id, "status": …}` after
it, `{"fatal": …}` when it cannot run at all (torch does not import, a bad --cases file).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import platform
import re
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Iterator

from rcompat.isolate import emit

FATAL_EXIT = 3
CUDA_ONLY_REASON = "float16, bfloat16 and TF32 variants run with --device cuda only"
_NAME = re.compile(r"^[A-Za-z0-9_]+$")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="rcompat.parity.child")
    parser.add_argument("workdir")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--cases", default=None)
    args = parser.parse_args(argv)
    emit({"step": "import torch"})
    try:
        import numpy as np
        import torch
    except Exception as exc:  # noqa: BLE001 - the interpreter lacks what the suite needs: say so
        emit({"fatal": f"{sys.executable} cannot import torch and numpy: {type(exc).__name__}: {exc}"})
        return FATAL_EXIT
    if args.threads > 0:
        torch.set_num_threads(args.threads)
    work = Path(args.workdir)
    (work / "out").mkdir(exist_ok=True)
    try:
        user_cases = _load_user_cases(args.cases) if args.cases else {}
    except Exception as exc:  # noqa: BLE001 - any error importing the user's file is theirs to fix
        emit({"fatal": f"--cases {args.cases}: {type(exc).__name__}: {exc}"})
        return FATAL_EXIT
    with np.load(work / "inputs.npz", allow_pickle=False) as npz:
        inputs = {name: npz[name] for name in npz.files}
    facts = environment_facts(torch, args.device)
    emit({"facts": facts})
    unavailable = None if args.device == "cpu" or facts["cuda_available"] else \
        f"CUDA not available to torch {torch.__version__} (CUDA build {torch.version.cuda or 'none'})"
    runner = _Runner(torch, np, work, inputs, args.device, unavailable)
    from rcompat.parity.suite import planned_cases

    planned = planned_cases()
    total = len(planned) + len(user_cases)
    for i, (cid, precision, case) in enumerate(planned, 1):
        runner.run(cid, f"{i}/{total}", lambda x, fn=case.fn: fn(torch, x), precision)
    for i, (name, fn) in enumerate(user_cases.items(), len(planned) + 1):
        runner.run(name, f"{i}/{total}", fn, None)
    _write_progress(work, "all cases done; the child exits")
    emit({"done": True})
    return 0


def _load_user_cases(path: str) -> dict[str, Any]:
    """`CASES = {"name": fn}` of a user's file; fn takes the inputs dict (float64 tensors on the device)."""
    spec = importlib.util.spec_from_file_location("rcompat_parity_user_cases", path)
    if spec is None or spec.loader is None:
        raise ImportError("not a Python file")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cases = getattr(module, "CASES", None)
    if not isinstance(cases, dict) or not all(callable(fn) for fn in cases.values()):
        raise TypeError("the file must define CASES = {'name': function(inputs) -> tensor}")
    from rcompat.parity.suite import planned_cases

    builtin = {cid for cid, _, _ in planned_cases()}
    for name in cases:
        if not isinstance(name, str) or not _NAME.match(name) or name in builtin:
            raise ValueError(f"case name {name!r} must be letters, digits and _ and not a built-in case id")
    return dict(cases)


class _Runner:
    def __init__(self, torch, np, work: Path, inputs: dict, device: str, unavailable: str | None):
        self.torch, self.np, self.work, self.inputs = torch, np, work, inputs
        self.device, self.unavailable = device, unavailable

    def run(self, cid: str, position: str, fn, precision: str | None) -> None:
        _write_progress(self.work, f"{position} {cid}")
        emit({"step": cid})
        if self.unavailable:
            emit({"case": cid, "status": "skip", "message": self.unavailable})
            return
        if precision in ("float16", "bfloat16", "tfloat32") and self.device == "cpu":
            emit({"case": cid, "status": "skip", "message": CUDA_ONLY_REASON})
            return
        try:
            dtype = self._dtype(precision or "float64")
            x = {k: self.torch.from_numpy(v).to(device=self.device, dtype=dtype) for k, v in self.inputs.items()}
            with self._tf32(precision == "tfloat32"):
                result = fn(x)
            outputs = self._save(cid, result, precision)
        except Exception as exc:  # noqa: BLE001 - a failing case is a result, not the end of the run
            emit({"case": cid, "status": "error", "message": f"{type(exc).__name__}: {exc}"[:2000]})
            return
        emit({"case": cid, "status": "ok", "outputs": outputs})

    def _dtype(self, precision: str):
        return {"float64": self.torch.float64, "float32": self.torch.float32, "tfloat32": self.torch.float32,
                "float16": self.torch.float16, "bfloat16": self.torch.bfloat16}[precision]

    @contextmanager
    def _tf32(self, on: bool) -> Iterator[None]:
        """TF32 variants allow it for cuBLAS and cuDNN; every other case runs with the process's settings
        (recorded in the manifest), so an environment that turned TF32 on shows up in float32."""
        backends = self.torch.backends
        saved = (backends.cuda.matmul.allow_tf32, backends.cudnn.allow_tf32)
        if on:
            backends.cuda.matmul.allow_tf32 = backends.cudnn.allow_tf32 = True
        try:
            yield
        finally:
            backends.cuda.matmul.allow_tf32, backends.cudnn.allow_tf32 = saved

    def _save(self, cid: str, result: Any, precision: str | None) -> dict[str, str]:
        parts = result if isinstance(result, dict) else {None: result}
        outputs = {}
        for part, value in parts.items():
            name = cid if part is None else f"{cid}.{part}"
            array, stored_precision = self._to_numpy(value)
            tmp = self.work / "out" / f".{name}.tmp.npy"
            self.np.save(tmp, array, allow_pickle=False)
            os.replace(tmp, self.work / "out" / f"{name}.npy")
            outputs[name] = precision or stored_precision
        return outputs

    def _to_numpy(self, value: Any):
        torch, np = self.torch, self.np
        if isinstance(value, torch.Tensor):
            value = value.detach().cpu()
            if value.dtype == torch.bfloat16:
                return value.float().numpy(), "bfloat16"
            value = value.numpy()
        array = np.asarray(value)
        if array.dtype.kind not in "fiub":
            raise TypeError(f"a case must return numeric tensors or arrays, not {array.dtype}")
        return array, str(array.dtype)


def environment_facts(torch, device: str) -> dict[str, Any]:
    """What a parity difference is usually explained by: versions, device, threads, BLAS, cuDNN, TF32."""
    cuda_available = bool(device == "cuda" and torch.cuda.is_available())
    try:  # the raw integer (90100); the parent decodes it (rcompat.cuda.torch_probe.decode_cudnn_version)
        cudnn = torch.backends.cudnn.version()
    except Exception:  # noqa: BLE001 - a CPU build may raise instead of returning None
        cudnn = None
    import numpy

    # TF32 needs compute capability 8.0 (Ampere) or newer; elsewhere the switches change nothing.
    tf32_capable = cuda_available and torch.cuda.get_device_capability(0)[0] >= 8
    allow = {"matmul": bool(torch.backends.cuda.matmul.allow_tf32), "cudnn": bool(torch.backends.cudnn.allow_tf32)}
    return {"side": "python", "interpreter": sys.executable, "python_version": platform.python_version(),
            "numpy_version": numpy.__version__, "torch_version": str(torch.__version__),
            "torch_cuda": torch.version.cuda, "cudnn_version": cudnn, "threads": torch.get_num_threads(),
            "blas": blas_summary(torch), "device": device, "cuda_available": cuda_available,
            "device_name": torch.cuda.get_device_name(0) if cuda_available else
            (cpu_name() if device == "cpu" else None),
            "tf32": allow, "tf32_in_effect": {k: v and tf32_capable for k, v in allow.items()}}


def blas_summary(torch) -> str:
    """`mkl (Intel(R) oneAPI Math Kernel Library Version 2024.2…), MKL-DNN v3.12.0` from torch's build
    configuration: the libraries whose kernels decide the order of additions."""
    try:
        config = torch.__config__.show()
    except Exception:  # noqa: BLE001
        return "unknown"
    blas = re.search(r"BLAS_INFO=([^,\s]+)", config)
    parts = [blas.group(1) if blas else "unknown"]
    for pattern in (r"Math Kernel Library Version [^\n]+", r"OpenBLAS[^\n]*", r"MKL-DNN v[\d.]+"):
        found = re.search(pattern, config)
        if found:
            parts.append(found.group(0).strip())
    return ", ".join(parts)


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _write_progress(work: Path, text: str) -> None:
    """The case under way, for the parent's progress line (it cannot read the pipe until the end)."""
    tmp = work / ".progress.tmp"
    tmp.write_text(text)
    os.replace(tmp, work / "progress")


if __name__ == "__main__":
    sys.exit(main())
