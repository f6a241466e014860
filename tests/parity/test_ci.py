"""`rcompat ci matrix --parity-baseline`: each cell carries its parity steps, and they run."""
from __future__ import annotations

import json
import shlex
import shutil


def _matrix(ph, *extra):
    proc = ph.run_cli("ci", "matrix", "--r", "4.4", "--torch", "0.13.0", "--cuda", "cpu,12.4", *extra)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)["include"]


def test_without_the_option_the_matrix_is_unchanged(ph):
    cells = _matrix(ph)
    assert cells == [{"r": "4.4", "torch": "0.13.0", "cuda": "cpu"}, {"r": "4.4", "torch": "0.13.0", "cuda": "12.4"}]


def test_each_cell_gets_a_record_and_a_compare_step(ph):
    cpu, gpu = _matrix(ph, "--parity-baseline", "parity/base line.npz")
    assert cpu["parity_record"] == ("rcompat parity record --side r --device cpu --inputs 'parity/base line.npz' "
                                    "--output parity-r4.4-torch0.13.0-cpu.npz")
    assert cpu["parity_compare"] == "rcompat parity compare 'parity/base line.npz' parity-r4.4-torch0.13.0-cpu.npz"
    assert "--device cuda" in gpu["parity_record"] and "cuda12.4" in gpu["parity_record"]
    assert {k: cpu[k] for k in ("r", "torch", "cuda")} == {"r": "4.4", "torch": "0.13.0", "cuda": "cpu"}
    assert ph.run_cli("ci", "matrix", "--r", "4.4", "--parity-baseline", " ").returncode == 2


def test_the_emitted_steps_run(ph, records, stand_in_lib, tmp_path):
    baseline = tmp_path / "baseline.npz"
    shutil.copy(records["threads1"], baseline)
    cpu, _ = _matrix(ph, "--parity-baseline", "baseline.npz")
    env = {"R_LIBS": str(stand_in_lib)}
    record = shlex.split(cpu["parity_record"])
    assert record[0] == "rcompat"
    proc = ph.run_cli(*record[1:], env=env, cwd=tmp_path)
    assert (tmp_path / "parity-r4.4-torch0.13.0-cpu.npz").exists(), proc.stderr
    compare = ph.run_cli(*shlex.split(cpu["parity_compare"])[1:], "--format", "json", cwd=tmp_path)
    findings = ph.findings(compare)
    assert findings["PARITY-matmul_f32"]["status"] == "ok"
    assert compare.returncode == 1 and findings["PARITY-conv2d_f32"]["status"] == "fail"  # the stand-in lacks it
