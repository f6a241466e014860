"""`race --device cuda` where CUDA is not available says so (issue 20.7): a skip naming the device, no
table of zero failures that reads like a clean run."""
import json


def test_race_on_a_missing_gpu_is_a_skip_that_says_why(cli):
    import importlib.util

    import pytest

    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a usable GPU: the race runs on it")
    run = cli("race", "--device", "cuda", "--trials", "1", "--iterations", "2")
    assert run.returncode == 0, run.stderr  # skip: not applicable here, never a pass (JUnit: skipped)
    assert "failed trials" not in run.stdout and "not run" in run.stdout
    assert "SKIP  RACE-SETUP" in run.stdout and "(device cuda)" in run.stdout
    assert "torch.cuda.is_available() is False" in " ".join(run.stdout.split())
    junit = cli("race", "--device", "cuda", "--trials", "1", "--iterations", "2", "--format", "junit")
    assert '<skipped message="CUDA was asked for' in junit.stdout
    data = json.loads(cli("race", "--device", "cuda", "--trials", "1", "--iterations", "2", "-f", "json").stdout)
    assert [f["status"] for f in data["findings"]] == ["skip"]
