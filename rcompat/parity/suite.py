"""The built-in parity suite: seeded inputs and the cases computed from them.

Needs only numpy (inputs) and torch (cases), because it runs in the parity child, possibly under
another interpreter (`--python`). rcompat/r_scripts/parity.R implements the same case ids on the same inputs
through R torch's public API; a case changed here must change there too.

A case is a function `(torch, x) -> tensor | {part: tensor}` of the inputs `x` (already converted to
the case's dtype and device). Its outputs are named `<case>_<tag>` (`matmul_f32`) or
`<case>_<tag>.<part>` (`mlp_backward_f64.grad_w1`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

DEFAULT_SEED = 0
# Tag of each precision in output names; tfloat32 is float32 with TF32 matmul/convolution allowed.
TAGS = {"float64": "f64", "float32": "f32", "float16": "f16", "bfloat16": "bf16", "tfloat32": "tf32"}
CPU_PRECISIONS = ("float32", "float64")
CUDA_ONLY_PRECISIONS = ("float16", "bfloat16", "tfloat32")
SUM_LENGTH = 1_000_000


def generate_inputs(seed: int = DEFAULT_SEED) -> dict[str, Any]:
    """Every input of the suite, float64, from one `numpy.random.default_rng(seed)` in a fixed order."""
    import numpy as np

    rng = np.random.default_rng(seed)
    normal = rng.standard_normal
    x = {
        "mm_a": normal((64, 48)), "mm_b": normal((48, 32)),
        "bmm_a": normal((4, 16, 24)), "bmm_b": normal((4, 24, 8)),
        "conv_x": normal((2, 3, 12, 12)), "conv_w": normal((4, 3, 3, 3)), "conv_b": normal(4),
        "logits": 3.0 * normal((16, 40)),
        "ln_x": normal((16, 40)), "ln_w": 1.0 + 0.1 * normal(40), "ln_b": 0.1 * normal(40),
        "mlp_x": normal((8, 20)), "mlp_w1": normal((32, 20)) / 20 ** 0.5, "mlp_b1": 0.1 * normal(32),
        "mlp_w2": normal((5, 32)) / 32 ** 0.5, "mlp_b2": 0.1 * normal(5), "mlp_target": normal((8, 5)),
    }
    # Magnitudes spread over e^-8..e^8 with mixed signs: the float32 sum depends on the order of
    # additions, so a change of thread count or kernel shows up here first.
    x["sum_x"] = normal(SUM_LENGTH) * np.exp(rng.uniform(-8.0, 8.0, SUM_LENGTH))
    return x


def _matmul(torch, x):
    return torch.matmul(x["mm_a"], x["mm_b"])


def _bmm(torch, x):
    return torch.bmm(x["bmm_a"], x["bmm_b"])


def _conv2d(torch, x):
    return torch.nn.functional.conv2d(x["conv_x"], x["conv_w"], x["conv_b"], padding=1)


def _softmax(torch, x):
    return torch.softmax(x["logits"], dim=-1)


def _log_softmax(torch, x):
    return torch.log_softmax(x["logits"], dim=-1)


def _layer_norm(torch, x):
    return torch.nn.functional.layer_norm(x["ln_x"], (x["ln_x"].shape[-1],), x["ln_w"], x["ln_b"], eps=1e-5)


def _mlp(torch, x):
    hidden = torch.relu(torch.nn.functional.linear(x["mlp_x"], x["mlp_w1"], x["mlp_b1"]))
    return torch.nn.functional.linear(hidden, x["mlp_w2"], x["mlp_b2"])


def _mlp_backward(torch, x):
    """Gradients of sum(MLP(x) * target) with respect to the weights and biases."""
    params = {k: x[k].detach().clone().requires_grad_(True) for k in ("mlp_w1", "mlp_b1", "mlp_w2", "mlp_b2")}
    out = _mlp(torch, {**x, **params})
    (out * x["mlp_target"]).sum().backward()
    return {"grad_" + k[len("mlp_"):]: p.grad for k, p in params.items()}


def _sum(torch, x):
    return x["sum_x"].sum()


@dataclass(frozen=True)
class Case:
    fn: Callable[[Any, dict], Any]
    precisions: tuple[str, ...]


_MATMUL_LIKE = CPU_PRECISIONS + CUDA_ONLY_PRECISIONS
_ELEMENTWISE = CPU_PRECISIONS + ("float16", "bfloat16")  # TF32 changes matmul/convolution only
CASES: dict[str, Case] = {
    "matmul": Case(_matmul, _MATMUL_LIKE),
    "bmm": Case(_bmm, _MATMUL_LIKE),
    "conv2d": Case(_conv2d, _MATMUL_LIKE),
    "softmax": Case(_softmax, _ELEMENTWISE),
    "log_softmax": Case(_log_softmax, _ELEMENTWISE),
    "layer_norm": Case(_layer_norm, _ELEMENTWISE),
    "mlp_forward": Case(_mlp, _MATMUL_LIKE),
    "mlp_backward": Case(_mlp_backward, _MATMUL_LIKE),
    # float16 overflows on this sum (values up to ~1e4, a million of them)
    "sum": Case(_sum, CPU_PRECISIONS + ("bfloat16",)),
}


def case_id(name: str, precision: str) -> str:
    return f"{name}_{TAGS[precision]}"


def planned_cases() -> list[tuple[str, str, Case]]:
    """(case id, precision, case) of every built-in case, float32/float64 first."""
    order = CPU_PRECISIONS + CUDA_ONLY_PRECISIONS
    return [(case_id(name, p), p, case) for p in order for name, case in CASES.items() if p in case.precisions]
