"""`rcompat device`: a --cache-dir that is not a directory is refused (it was silently ignored), and a
device.json replaced by a FIFO or a directory is rebuilt (a FIFO blocked the read; a directory made
every rewrite fail)."""
from __future__ import annotations

import importlib.util
import json
import os

import pytest

from rcompat.cuda.device import CACHE_FILE, choose_device
from rcompat.errors import UsageError

CLEAN_ENV = {k: v for k, v in os.environ.items() if k not in ("CUDA_VISIBLE_DEVICES", "CUDA_ENABLE")}


def test_cache_dir_that_is_a_file_is_refused(cli, tmp_path):
    target = tmp_path / "FILE"
    target.write_text("mine\n")
    out = cli("device", "--cache-dir", str(target))
    assert out.returncode == 2 and out.stdout == ""
    lines = out.stderr.strip().splitlines()
    assert lines == [f"rcompat: error: cache directory {target}: not a directory"]
    assert target.read_text() == "mine\n"
    with pytest.raises(UsageError, match="not a directory"):
        choose_device(cache_dir=target, env=CLEAN_ENV)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed (make test installs it)")
@pytest.mark.parametrize("kind", ["fifo", "directory"])
def test_a_damaged_device_entry_is_rebuilt(nvml_fake, tmp_path, kind):
    entry = tmp_path / CACHE_FILE
    if kind == "fifo":
        os.mkfifo(entry)
    else:
        (entry / "inside").mkdir(parents=True)
    choice = choose_device(nvml=nvml_fake.Nvml(), cache_dir=tmp_path, env=CLEAN_ENV, timeout=120)
    assert choice.device == "cpu" and choice.facts["cache"] == "unreadable"
    assert "cache_error" not in choice.facts
    assert entry.is_file() and json.loads(entry.read_text())["choice"]["device"] == "cpu"
    again = choose_device(nvml=nvml_fake.Nvml(), cache_dir=tmp_path, env=CLEAN_ENV, timeout=120)
    assert again.facts["cache"] == "hit"
