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
    if STATE["i"] == 16:
        {end}
CASES = {{"step": step}}
'''


@pytest.mark.parametrize("end, status, title", [
    ("os.abort()", "fail", "the soak child: killed by SIGABRT"),
    ("raise RuntimeError('CUDA out of memory (made up)')", "error", "the workload raised an error"),
])
def test_the_end_of_the_child_is_reported_and_earlier_samples_judged(cli, tmp_path, end, status, title):
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch not installed in this interpreter")
    cases = tmp_path / "cases.py"
    cases.write_text(ABORTS.format(end=end))
    proc = cli("soak", "--cases", str(cases), "--iterations", "30", "--warmups", "1", "--format", "json")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    found = {f["id"]: f for f in doc["findings"]}
    assert found["SOAK-RUN"]["status"] == status and found["SOAK-RUN"]["title"] == title, found["SOAK-RUN"]
    assert doc["facts"]["soak"]["series"]["iteration"] == list(range(14))  # calls 2..15; the 16th ended it
    assert found["SOAK-HOST"]["evidence"]["rss"]["verdict"] == "leak"  # judged from what was sampled
