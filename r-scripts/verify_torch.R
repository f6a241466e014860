# Does R torch actually run? Run by rcompat in a child Rscript with a timeout:
#   Rscript verify_torch.R
# Prints one JSON object per line: {"step": ...} before each step (so a crash names it), results
# after. An R error is reported as {"error": ..., "step": ...} and exit status 1; a segfault in
# torch's native code kills this process, which rcompat reports with the last step printed.

emit <- function(...) {
  x <- list(...)
  if (requireNamespace("jsonlite", quietly = TRUE)) {
    line <- jsonlite::toJSON(x, auto_unbox = TRUE, null = "null", digits = NA)
  } else {
    value <- function(v) {
      if (is.null(v) || (length(v) == 1L && is.na(v))) return("null")
      if (is.logical(v)) return(if (v) "true" else "false")
      if (is.numeric(v)) return(paste0("[", paste(format(v, trim = TRUE), collapse = ","), "]"))
      s <- gsub("([\"\\\\])", "\\\\\\1", as.character(v)[1L])
      paste0("\"", gsub("[[:cntrl:]]", " ", s), "\"")
    }
    line <- paste0("{", paste0("\"", names(x), "\":", vapply(x, value, ""), collapse = ","), "}")
  }
  cat(line, "\n", sep = "")
  flush(stdout())
}

step <- function(name, expr) {
  emit(step = name)
  tryCatch(expr, error = function(e) {
    emit(error = conditionMessage(e), step = name)
    quit(save = "no", status = 1L)
  })
}

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
