# Does R torch actually run? Run by rcompat in a child Rscript with a timeout:
#   Rscript verify_torch.R
# Prints one JSON object per line: {"step": ...} before each step (so a crash names it), results
# after. An R error is reported as {"error": ..., "step": ...} and exit status 1; a segfault in
# torch's native code kills this process, which rcompat reports with the last step printed.

source(file.path(dirname(normalizePath(sub("^--file=", "",
  grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)[1L]))), "verify_common.R"))

step("library(torch)", suppressPackageStartupMessages(library(torch)))
emit(torch_version = as.character(utils::packageVersion("torch")))
x <- step("torch_randn(3, 3)", torch_randn(3, 3))
y <- step("torch_matmul(x, x)", torch_matmul(x, x))
emit(matmul_shape = as.integer(dim(y)))
cuda <- step("cuda_is_available()", isTRUE(cuda_is_available()))
emit(cuda_available = cuda)
if (cuda) {
  back <- step("tensor to CUDA and back", {
    g <- x$to(device = torch_device("cuda"))
    as.array(g$cpu())
  })
  emit(cuda_roundtrip_ok = isTRUE(all.equal(as.array(back), as.array(x))))
}
emit(done = TRUE)
