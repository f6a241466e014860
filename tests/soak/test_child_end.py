"""The child's end is a finding, and the samples before it are still judged: a workload that raises,
and one that aborts the process (SIGABRT), part-way through the run."""
from __future__ import annotations

import importlib.util
import json

import pytest

ABORTS = '''
import os
import torch
KEPT, STATE = [], {{"i": 0}}
def step(x):
    STATE["i"] += 1
    KEPT.append(torch.ones(1 << 18))
    if STATE["i"] == 30:
        {end}
CASES = {{"step": step}}
'''


# Call 1 is the warm-up, calls 2..29 are measured iterations 0..27, call 30 ends the run. The child
# writes its pending samples before each full sample (every iteration of a 40-iteration run): a raise
# still writes the last one (28 samples), an abort loses it (27).
@pytest.mark.parametrize("end, status, title, kept", [
    ("os.abort()", "fail", "the soak child: killed by SIGABRT", 27),
    ("raise RuntimeError('CUDA out of memory (made up)')", "error", "the workload raised an error", 28),
])
def test_the_end_of_the_child_is_reported_and_earlier_samples_judged(cli, tmp_path, end, status, title, kept):
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch not installed in this interpreter")
    cases = tmp_path / "cases.py"
    cases.write_text(ABORTS.format(end=end))
    proc = cli("soak", "--cases", str(cases), "--iterations", "40", "--warmups", "1", "--format", "json")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    found = {f["id"]: f for f in doc["findings"]}
    assert found["SOAK-RUN"]["status"] == status and found["SOAK-RUN"]["title"] == title, found["SOAK-RUN"]
    assert doc["facts"]["soak"]["series"]["iteration"] == list(range(kept))
    assert found["SOAK-HOST"]["evidence"]["rss"]["verdict"] == "leak"  # judged from what was sampled
