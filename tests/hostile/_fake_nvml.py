"""A libnvidia-ml.so.1 of our own, compiled with gcc during the run: a driver that hangs, crashes or lies.

pynvml loads the library by name (`CDLL("libnvidia-ml.so.1")`), so putting the directory holding this
one first on LD_LIBRARY_PATH makes the probe child load it. MODES says what each variant does; "ok"
answers like a one-GPU machine whose per-GPU queries are missing (pynvml: FunctionNotFound).
"""
from __future__ import annotations

import subprocess
from pathlib import Path

SOURCE = r"""
#include <signal.h>
#include <string.h>
#include <unistd.h>

#ifndef MODE
#define MODE 0
#endif
/* 0 ok, 1 hang in init, 2 crash when loaded, 3 four billion GPUs, 4 unreadable driver version */

__attribute__((constructor)) static void on_load(void) {
    if (MODE == 2) raise(SIGSEGV);
}
int nvmlInitWithFlags(unsigned int flags) {
    (void)flags;
    if (MODE == 1) for (;;) pause();
    return 0;
}
int nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
int nvmlShutdown(void) { return 0; }
const char *nvmlErrorString(int code) { (void)code; return "fake NVML error"; }
int nvmlSystemGetDriverVersion(char *out, unsigned int length) {
    const char *text = MODE == 4 ? "\x1b[31mnot-a-version" : "535.104.05";
    strncpy(out, text, length);
    out[length - 1] = 0;
    return 0;
}
int nvmlSystemGetCudaDriverVersion_v2(int *version) { *version = 12020; return 0; }
int nvmlDeviceGetCount_v2(unsigned int *count) { *count = MODE == 3 ? 4000000000u : 1; return 0; }
"""
MODES = {"ok": 0, "hang": 1, "crash": 2, "many": 3, "driver": 4}


def build(directory: Path, mode: str) -> Path:
    """A directory holding libnvidia-ml.so.1 of `mode`; put it first on LD_LIBRARY_PATH."""
    directory.mkdir(parents=True, exist_ok=True)
    source = directory / "fake_nvml.c"
    source.write_text(SOURCE)
    library = directory / "libnvidia-ml.so.1"
    subprocess.run(["gcc", "-shared", "-fPIC", "-O0", f"-DMODE={MODES[mode]}", "-o", str(library), str(source)],
                   check=True, timeout=60)
    return directory


def truncated(directory: Path) -> Path:
    """A libnvidia-ml.so.1 cut short: its ELF header says more than the file holds."""
    built = build(directory / "whole", "ok") / "libnvidia-ml.so.1"
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "libnvidia-ml.so.1").write_bytes(built.read_bytes()[:300])
    return directory
