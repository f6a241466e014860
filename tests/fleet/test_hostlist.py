"""Hostlists against the real `scontrol show hostnames|hostlist` (it reads no daemon, only a slurm.conf)."""
from __future__ import annotations

import os
import random
import shutil
import subprocess

import pytest

from rcompat.errors import UsageError
from rcompat.fleet.hostlist import compress, expand, natural_key

EXPRESSIONS = ["n[1-3,5]", "gpu[001-016,018]", "x[01-02,3]", "n[8-10,010]", "rack[1-2]-n[01-03]", "a,b,n1",
               "n[09-11]", "login", "c[1-1000]"]


@pytest.fixture(scope="module")
def scontrol(tmp_path_factory):
    if not shutil.which("scontrol"):
        pytest.skip("scontrol not installed (make test installs slurm-client)")
    conf = tmp_path_factory.mktemp("conf") / "slurm.conf"
    conf.write_text("ClusterName=hostlists\nSlurmctldHost=localhost\nNodeName=n1\n")

    def run(*args: str) -> str:
        out = subprocess.run(["scontrol", *args], capture_output=True, text=True, timeout=30,
                             env={**os.environ, "SLURM_CONF": str(conf)})
        assert out.returncode == 0, out.stderr
        return out.stdout.strip()

    return run


@pytest.mark.parametrize("expression", EXPRESSIONS)
def test_expand_matches_scontrol_show_hostnames(scontrol, expression):
    assert expand(expression) == scontrol("show", "hostnames", expression).splitlines()


def test_compress_matches_scontrol_show_hostlist(scontrol):
    rng = random.Random(25)
    sets = [expand(e) for e in EXPRESSIONS]
    sets += [rng.sample(expand("n[1-300]"), 40) for _ in range(5)]
    sets += [rng.sample(expand("gpu[001-120]") + expand("cpu[1-30]"), 25) for _ in range(5)]
    for names in sets:
        ordered = sorted(names, key=natural_key)
        assert compress(names) == scontrol("show", "hostlist", ",".join(ordered)), ordered


def test_a_thousand_nodes_fit_on_one_line():
    names = [f"n{i}" for i in range(1, 1001) if i not in (17, 512)]
    assert compress(names) == "n[1-16,18-511,513-1000]"
    assert expand(compress(names)) == names


@pytest.mark.parametrize("bad", ["n[1-", "n[3-1]", "n[a-b]", "n1]", "n[[1]]", "n[1-99999999]"])
def test_a_bad_hostlist_is_a_usage_error(bad):
    with pytest.raises(UsageError, match="hostlist"):
        expand(bad)
