# rcompat soak --side r's default workload: cases of the parity suite through R torch's public API
# (matmul, bmm, softmax, log-softmax, layer norm, the MLP forward, an order-sensitive sum), on inputs
# drawn once with set.seed(soak_seed) and moved to soak_device before the loop, so an iteration is the
# computation alone. soak.R sources this file into an environment holding soak_device and soak_seed,
# then calls soak_iteration(i) once per iteration. Only calls parity.R makes, so rcompat's test
# stand-in for R torch (fixtures/rpkgs/torch-parity) runs it too.
suppressPackageStartupMessages(library(torch))
set.seed(soak_seed)
soak_shapes <- list(mm_a = c(64, 48), mm_b = c(48, 32), bmm_a = c(4, 16, 24), bmm_b = c(4, 24, 8),
                    logits = c(16, 40), ln_x = c(16, 40), ln_w = 40, ln_b = 40, mlp_x = c(8, 20),
                    mlp_w1 = c(32, 20), mlp_b1 = 32, mlp_w2 = c(5, 32), mlp_b2 = 5, sum_x = 1e6)
soak_x <- lapply(soak_shapes, function(shape) {
  values <- rnorm(prod(shape))
  torch_tensor(if (length(shape) > 1L) array(values, dim = shape) else values,
               dtype = torch_float32())$to(device = soak_device)
})

soak_iteration <- function(i) {
  x <- soak_x
  torch_matmul(x$mm_a, x$mm_b)
  torch_bmm(x$bmm_a, x$bmm_b)
  nnf_softmax(x$logits, dim = 2)
  nnf_log_softmax(x$logits, dim = 2)
  nnf_layer_norm(x$ln_x, normalized_shape = 40L, weight = x$ln_w, bias = x$ln_b, eps = 1e-5)
  nnf_linear(nnf_relu(nnf_linear(x$mlp_x, x$mlp_w1, x$mlp_b1)), x$mlp_w2, x$mlp_b2)
  torch_sum(x$sum_x)
  invisible(NULL)
}
