# The parity suite through R torch. Run by `rcompat parity record --side r` in a child Rscript:
#   Rscript parity.R WORKDIR DEVICE THREADS
# WORKDIR/inputs/<name>.npy   inputs, little-endian float64 (.npy version 1, any order)
# WORKDIR/plan.tsv            id, case, precision of every case (rcompat's suite, in its order)
# WORKDIR/out/<name>.npy      written here: one file per output, float64, Fortran order
# Prints JSON lines: {"facts": ...}, {"step": id} before each case, {"case": id, "status": ...} after,
# {"fatal": ...} when it cannot start (no torch). Uses only base R and torch's public API, so the real
# R torch and rcompat's test stand-in (fixtures/rpkgs/torch-parity) run it unchanged.

source(file.path(dirname(normalizePath(sub("^--file=", "",
  grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)[1L]))), "r_facts.R"))

emit <- function(x) {
  cat(rcompat_json(x), "\n", sep = "")
  flush(stdout())
}

read_npy <- function(path) {
  con <- file(path, "rb")
  on.exit(close(con))
  magic <- readBin(con, "raw", 6L)
  if (!identical(magic, c(as.raw(0x93), charToRaw("NUMPY")))) stop(path, ": not a .npy file")
  version <- readBin(con, "integer", 2L, size = 1L, signed = FALSE)
  header_len <- if (version[1L] == 1L) readBin(con, "integer", 1L, size = 2L, signed = FALSE, endian = "little")
                else readBin(con, "integer", 1L, size = 4L, endian = "little")
  header <- rawToChar(readBin(con, "raw", header_len))
  descr <- sub(".*'descr': *'([^']+)'.*", "\\1", header)
  if (descr != "<f8") stop(path, ": expected little-endian float64 ('<f8'), found ", descr)
  shape_text <- gsub("[ ]", "", sub(".*'shape': *\\(([^)]*)\\).*", "\\1", header))
  shape <- if (nzchar(shape_text)) as.integer(strsplit(shape_text, ",")[[1L]]) else integer(0)
  values <- readBin(con, "double", if (length(shape)) prod(shape) else 1L, size = 8L, endian = "little")
  if (length(shape) < 2L) return(values)
  if (grepl("'fortran_order': *True", header)) return(array(values, dim = shape))
  aperm(array(values, dim = rev(shape)), rev(seq_along(shape)))  # C order: last index fastest
}

write_npy <- function(values, shape, path) {
  shape_text <- if (length(shape) == 1L) paste0(shape, ",") else paste(shape, collapse = ", ")
  dict <- sprintf("{'descr': '<f8', 'fortran_order': True, 'shape': (%s), }", shape_text)
  pad <- (64L - (10L + nchar(dict) + 1L) %% 64L) %% 64L
  header <- paste0(dict, strrep(" ", pad), "\n")
  tmp <- paste0(path, ".tmp")
  con <- file(tmp, "wb")
  writeBin(c(as.raw(0x93), charToRaw("NUMPY"), as.raw(c(1L, 0L))), con)
  writeBin(nchar(header), con, size = 2L, endian = "little")
  writeBin(charToRaw(header), con)
  writeBin(as.double(values), con, size = 8L, endian = "little")
  close(con)
  file.rename(tmp, path)
}

args <- commandArgs(trailingOnly = TRUE)
work <- args[1L]
device <- if (length(args) >= 2L) args[2L] else "cpu"
threads <- if (length(args) >= 3L) as.integer(args[3L]) else 0L

emit(list(step = "library(torch)"))
loaded <- tryCatch({ suppressPackageStartupMessages(library(torch)); TRUE },
                   error = function(e) conditionMessage(e))
if (!isTRUE(loaded)) {
  emit(list(fatal = paste("library(torch) failed:", loaded)))
  quit(save = "no", status = 3L)
}
if (threads > 0L) torch_set_num_threads(threads)
cuda <- device == "cuda" && isTRUE(cuda_is_available())

emit(list(facts = list(
  side = "r", interpreter = file.path(R.home("bin"), "Rscript"),
  r_version = paste(R.version$major, R.version$minor, sep = "."),
  torch_version = as.character(utils::packageVersion("torch")),
  torch_package = system.file(package = "torch"),
  threads = torch_get_num_threads(), device = device, cuda_available = cuda,
  device_name = if (device == "cpu") "cpu (R torch)" else NULL,
  blas = paste("R:", La_library())
)))

dtypes <- list(float64 = function() torch_float64(), float32 = function() torch_float32(),
               float16 = function() torch_float16(), bfloat16 = function() torch_bfloat16())

inputs <- list()
for (f in list.files(file.path(work, "inputs"), pattern = "\\.npy$", full.names = TRUE))
  inputs[[sub("\\.npy$", "", basename(f))]] <- read_npy(f)

mlp <- function(x, w1, b1, w2, b2) nnf_linear(nnf_relu(nnf_linear(x, w1, b1)), w2, b2)

# Same ids, same inputs, same definitions as rcompat/parity/suite.py (dims are 1-based here).
cases <- list(
  matmul = function(x) torch_matmul(x$mm_a, x$mm_b),
  bmm = function(x) torch_bmm(x$bmm_a, x$bmm_b),
  conv2d = function(x) nnf_conv2d(x$conv_x, x$conv_w, x$conv_b, padding = 1),
  softmax = function(x) nnf_softmax(x$logits, dim = 2),
  log_softmax = function(x) nnf_log_softmax(x$logits, dim = 2),
  layer_norm = function(x) nnf_layer_norm(x$ln_x, normalized_shape = tail(dim(inputs$ln_x), 1L),
                                          weight = x$ln_w, bias = x$ln_b, eps = 1e-5),
  mlp_forward = function(x) mlp(x$mlp_x, x$mlp_w1, x$mlp_b1, x$mlp_w2, x$mlp_b2),
  mlp_backward = function(x) {
    p <- lapply(list(w1 = x$mlp_w1, b1 = x$mlp_b1, w2 = x$mlp_w2, b2 = x$mlp_b2),
                function(t) t$detach()$requires_grad_(TRUE))
    out <- mlp(x$mlp_x, p$w1, p$b1, p$w2, p$b2)
    torch_sum(out * x$mlp_target)$backward()
    list(grad_w1 = p$w1$grad, grad_b1 = p$b1$grad, grad_w2 = p$w2$grad, grad_b2 = p$b2$grad)
  },
  sum = function(x) torch_sum(x$sum_x)
)

save_output <- function(name, tensor) {
  values <- as_array(tensor$to(device = "cpu")$to(dtype = torch_float64()))
  write_npy(as.vector(values), as.integer(tensor$shape), file.path(work, "out", paste0(name, ".npy")))
}

plan <- utils::read.delim(file.path(work, "plan.tsv"), colClasses = "character")
for (i in seq_len(nrow(plan))) {
  id <- plan$id[i]
  precision <- plan$precision[i]
  emit(list(step = id))
  if (device == "cuda" && !cuda) {
    emit(list(case = id, status = "skip", message = "CUDA not available to R torch"))
    next
  }
  if (precision == "tfloat32") {
    emit(list(case = id, status = "skip", message = "R torch's public API has no TF32 switch"))
    next
  }
  if (device == "cpu" && precision %in% c("float16", "bfloat16")) {
    emit(list(case = id, status = "skip", message = "float16 and bfloat16 variants run with --device cuda only"))
    next
  }
  outcome <- tryCatch({
    dtype <- dtypes[[precision]]()
    x <- lapply(inputs, function(v) torch_tensor(v, dtype = torch_float64())$to(dtype = dtype)$to(device = device))
    result <- cases[[plan$case[i]]](x)
    parts <- if (inherits(result, "torch_tensor")) stats::setNames(list(result), id)
             else stats::setNames(result, paste0(id, ".", names(result)))
    for (name in names(parts)) save_output(name, parts[[name]])
    list(case = id, status = "ok", outputs = as.list(stats::setNames(rep(precision, length(parts)), names(parts))))
  }, error = function(e) list(case = id, status = "error", message = conditionMessage(e)))
  emit(outcome)
}
emit(list(done = TRUE))
