"""The smaller faults: a Ctrl-C during clean-up, an R_HOME that cannot be stat()ed, a timed-out child's
words, an NVML answer read back from its child."""
from __future__ import annotations

import os
import shutil

import pytest

from rcompat.termination import despite_interrupts


def test_an_interrupt_during_clean_up_lets_it_finish_then_is_raised(tmp_path):
    root = tmp_path / "rcompat-root-x"
    for i in range(50):
        (root / f"d{i}").mkdir(parents=True)
        (root / f"d{i}" / "f").write_text("x")
    calls = []

    def remove(path):  # the first pass is cut short by a Ctrl-C after removing a part
        calls.append(path)
        if len(calls) == 1:
            shutil.rmtree(path / "d0")
            raise KeyboardInterrupt
        shutil.rmtree(path)

    with pytest.raises(KeyboardInterrupt):
        despite_interrupts(remove, root)
    assert len(calls) == 2 and not root.exists()


@pytest.mark.parametrize("r_home", ["/x" * 3000, "bad\0name", "/proc/self/fd/999999/R"])
def test_an_r_home_that_cannot_be_stat_ed_falls_back_to_path(r_home, tmp_path):
    from rcompat.r.host import locate_r

    assert locate_r({"R_HOME": r_home, "PATH": str(tmp_path)}) is None  # no R there: absent, no crash


def test_a_timed_out_child_is_called_a_time_out(tmp_path):
    from rcompat.isolate import run_child

    result = run_child(["sleep", "30"], timeout=0.5)
    assert result.timed_out and "timed out" in result.describe_end()


def test_nvml_facts_survive_the_round_trip_through_the_child():
    from rcompat.cuda.nvml import Gpu, GpuProcess, NvmlFacts
    from rcompat.cuda.nvml import facts_from_dict

    facts = NvmlFacts(status="ok", driver_version="535.104.05", cuda_driver_version="12.2",
                      gpus=[Gpu(0, "H200", "GPU-1", "9.0", 143771.0, 1.0, [GpuProcess(7, 2.0, "R")], {"x": "y"})])
    assert facts_from_dict(facts.to_dict()) == facts


def test_a_mapped_file_truncated_meanwhile_is_reported_not_a_sigbus(tmp_path):
    import mmap
    import subprocess
    import time

    from rcompat import mapguard
    from rcompat.inputs import open_mapped

    path = tmp_path / "libbig.so"
    path.write_bytes(b"\x7fELF" + bytes(1 << 20))
    truncate = None
    with pytest.raises(mapguard.FileChanged) as info:
        with mapguard.installed():
            fh = open_mapped(path)
            mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            try:
                # the kernel holds this truncation back (the lease) and tells rcompat first
                truncate = subprocess.Popen(["python3", "-c", "import os, sys; os.truncate(sys.argv[1], 0)", str(path)])
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    assert mapped[(1 << 20) - 1] == 0  # past the new end once truncated: SIGBUS without the lease
                    time.sleep(0.01)
            finally:
                mapped.close()
                fh.close()
    assert "changed under rcompat" in str(info.value) and str(path) in str(info.value)
    assert truncate.wait(timeout=60) == 0 and path.stat().st_size == 0  # the writer went on afterwards
