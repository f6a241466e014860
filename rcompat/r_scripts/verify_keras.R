# Do keras / keras3 / tensorflow actually run? Run by rcompat in a child Rscript with a timeout:
#   Rscript verify_keras.R keras|keras3|tensorflow
# Loading keras initialises Python through reticulate, so this is only ever run in a child.
# Prints JSON lines like verify_torch.R: {"step": ...} before each step, results after; an R error
# is {"error": ..., "step": ...} with exit status 1.

source(file.path(dirname(normalizePath(sub("^--file=", "",
  grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)[1L]))), "verify_common.R"))

pkg <- commandArgs(trailingOnly = TRUE)[1L]
if (is.na(pkg) || !pkg %in% c("keras", "keras3", "tensorflow")) {
  emit(error = "usage: Rscript verify_keras.R keras|keras3|tensorflow", step = "arguments")
  quit(save = "no", status = 2L)
}

step(sprintf("library(%s)", pkg), suppressPackageStartupMessages(library(pkg, character.only = TRUE)))
emit(package = pkg, version = as.character(utils::packageVersion(pkg)))
if (pkg != "tensorflow") {
  available <- get0("is_keras_available", envir = asNamespace(pkg), inherits = FALSE)
  if (!is.null(available)) {
    ok <- step("is_keras_available()", isTRUE(available()))
    emit(keras_available = ok)
  }
}
if (pkg == "tensorflow" || requireNamespace("tensorflow", quietly = TRUE)) {
  tf <- tensorflow::tf
  a <- step("tf$constant(matrix(1:4, 2))", tf$constant(matrix(c(1, 2, 3, 4), 2L)))
  b <- step("tf$matmul(a, a)", tf$matmul(a, a))
  emit(matmul_sum = sum(as.array(b)))
  gpus <- step("tf$config$list_physical_devices('GPU')", length(tf$config$list_physical_devices("GPU")))
  emit(gpu_count = gpus)
}
emit(done = TRUE)
