"""On the root's Debian release: the README's `make doctor` from a checkout (torch optional: there is no
torch 2.13.0 wheel for Python 3.13 on disk), the whole doctor from the wheel, and the parity R side."""
from __future__ import annotations

import json



def findings(report: dict) -> dict:
    return {f["id"]: f for f in report["findings"]}


def test_make_doctor_from_a_checkout(tier, tier_facts):
    """`make doctor` sets up .venv (rpy2 from the table, offline from the root's wheelhouse) and runs."""
    src = f"{tier.inside}/src"
    proc = tier.sh(f"cd {src} && make doctor ARGS='--only r --format json --no-cache'",
                   env={"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": tier.module.WHEELHOUSE}, timeout=900)
    out = proc.stdout
    assert proc.returncode in (0, 1), out[-3000:] + proc.stderr[-3000:]
    if tier_facts["expected"]["python"] != "3.11":
        assert "wheel for this Python on disk: set up without torch" in out
    report = findings(json.loads(out[out.index("{"):]))
    assert report["R-RPY2"]["status"] == "ok", report["R-RPY2"]
    assert tier_facts["expected"]["R"] in report["R-VERSION"]["title"]
    pick = tier.sh(f"cd {src} && .venv/bin/python -m pip list 2>/dev/null | grep -i '^rpy2 '", check=True)
    assert pick.stdout.split()[1].startswith(tier_facts["expected"]["rpy2"])


def test_whole_doctor_from_the_wheel(tier, tier_facts):
    report = tier.doctor_json(env={"RETICULATE_PYTHON": f"{tier.venv}/bin/python"}, timeout=600)
    by_id = findings(report)
    areas = {f["area"] for f in report["findings"]}
    assert {"r", "python", "cuda", "elf", "race"} <= areas
    errors = [f for f in report["findings"] if f["status"] == "error"]
    assert errors == [], errors
    assert by_id["R-RPY2"]["title"].endswith(f"({tier_facts['expected']['mode']} mode)")


def test_parity_r_side_on_this_r(tier, tier_facts):
    lib = tier.r_lib("parity", ("torch-parity", "0.12.0"))
    out = f"{tier.inside}/r.npz"
    proc = tier.rcompat("parity", "record", "--side", "r", "-o", out, env={"R_LIBS": lib}, timeout=300)
    assert proc.returncode in (0, 1), proc.stdout + proc.stderr
    code = ("import json, numpy as np, sys; z = np.load(sys.argv[1]); "
            "print(str(z['manifest'][()]))")
    manifest = json.loads(tier.run([f"{tier.venv}/bin/python", "-c", code, out], check=True).stdout)
    text = json.dumps(manifest)
    assert tier_facts["expected"]["R"] in text
    statuses = {case: info.get("status") for case, info in manifest["cases"].items()}
    assert statuses and "ok" in statuses.values(), statuses
