"""`rcompat ci matrix --soak-cases FILE.R`: every cell gets a soak command for its device, one the soak
CLI itself accepts."""
from __future__ import annotations

import json
import shlex


def test_each_cell_gets_a_soak_step_the_soak_cli_accepts(cli, workloads):
    proc = cli("ci", "matrix", "--r", "4.4", "--torch", "0.13.0", "--cuda", "cpu,12.4",
               "--soak-cases", str(workloads["lazy.R"]), "--quiet")
    assert proc.returncode == 0, proc.stderr
    cells = json.loads(proc.stdout)["include"]
    assert [c["cuda"] for c in cells] == ["cpu", "12.4"]
    from rcompat.cli.main import build_parser

    for cell in cells:
        argv = shlex.split(cell["soak"])
        assert argv[:2] == ["rcompat", "soak"]
        args = build_parser(argv[1:]).parse_args(argv[1:])
        assert args.side == "r" and args.cases == str(workloads["lazy.R"]) and args.format == "junit"
        assert args.device == ("cpu" if cell["cuda"] == "cpu" else "cuda")
        assert args.output.startswith("soak-r4.4-torch0.13.0-") and args.output.endswith(".xml")
