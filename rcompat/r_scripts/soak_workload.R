# rcompat soak --side r's default workload: the parity suite's cases through R torch (the same
# computations as rcompat/parity/suite.py, on inputs drawn once from torch_manual_seed(soak_seed)).
# soak.R sources this file into an environment holding soak_device and soak_seed, then calls
# soak_iteration(i) once per iteration.
suppressPackageStartupMessages(library(torch))
torch_manual_seed(soak_seed)
soak_x <- lapply(list(mm_a = c(64, 48), mm_b = c(48, 32), logits = c(16, 40), ln_x = c(16, 40),
                      mlp_x = c(8, 20), mlp_w1 = c(32, 20), mlp_b1 = 32, mlp_w2 = c(5, 32), mlp_b2 = 5,
                      sum_x = 1e6),
                 function(shape) torch_randn(shape)$to(device = soak_device))

soak_iteration <- function(i) {
  x <- soak_x
  torch_matmul(x$mm_a, x$mm_b)
  nnf_softmax(x$logits, dim = 2)
  nnf_log_softmax(x$logits, dim = 2)
  nnf_layer_norm(x$ln_x, normalized_shape = 40L)
  nnf_linear(nnf_relu(nnf_linear(x$mlp_x, x$mlp_w1, x$mlp_b1)), x$mlp_w2, x$mlp_b2)
  torch_sum(x$sum_x)
  invisible(NULL)
}
