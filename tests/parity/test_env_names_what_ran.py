"""PARITY-ENV names where each side really ran (issue 20.7): a record made with --device cuda on a
machine without a usable GPU ran no case, and says so instead of "on cuda"; its JSON stays strict."""
import json

import pytest


def test_a_cuda_record_that_ran_nothing_is_not_described_as_on_cuda(cli, tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a usable GPU: the cuda record runs its cases")
    a, b = tmp_path / "a.npz", tmp_path / "b.npz"
    assert cli("parity", "record", "--output", str(a), "--threads", "1").returncode == 0
    assert cli("parity", "record", "--device", "cuda", "--inputs", str(a), "--output", str(b)).returncode == 0
    run = cli("parity", "compare", str(a), str(b), "--format", "json")

    def refuse(constant):
        raise ValueError(constant)

    data = json.loads(run.stdout, parse_constant=refuse)  # strict JSON
    env = next(f for f in data["findings"] if f["id"] == "PARITY-ENV")
    assert "A: python torch" in env["title"] and " on cpu" in env["title"]
    assert "B: python torch" in env["title"] and "cuda requested, not available: no case ran" in env["title"]
    assert len({f["id"] for f in data["findings"]}) == len(data["findings"])
