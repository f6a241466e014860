# The functions R users call: each returns an rcompat_result data.frame (see result.R) with the
# columns its help page names, also when it has no rows.

existing <- function(path, what) {
  if (!is.character(path) || length(path) != 1 || is.na(path) || !nzchar(path)) {
    stop(sprintf("rcompat: %s must be one path", what), call. = FALSE)
  }
  if (!file.exists(path)) stop(sprintf("rcompat: %s %s does not exist", what, path), call. = FALSE)
  normalizePath(path)
}

doctor <- function(areas = NULL, timeout = NULL) {
  call_python("doctor", areas = if (is.null(areas)) NULL else I(as.character(areas)), timeout = timeout)
}

explain <- function(text) {
  call_python("explain", text = paste(as.character(text), collapse = "\n"))
}

elf_missing <- function(path) {
  call_python("elf_missing", path = existing(path, "path"))
}

abi_diff <- function(old, new) {
  call_python("abi_diff", old = existing(old, "old"), new = existing(new, "new"))
}

device <- function() {
  call_python("device")
}

race <- function(device = "auto", iterations = 20L, workers = 4L, mode = "both", timeout = 30,
                 trials = 3L, seed = NULL, r_stack_check = TRUE, trace = NULL) {
  call_python("race", device = device, iterations = as.integer(iterations), workers = as.integer(workers),
              mode = mode, timeout = timeout, trials = as.integer(trials),
              seed = if (is.null(seed)) NULL else as.integer(seed), r_stack_check = r_stack_check,
              trace = if (is.null(trace)) NULL else path.expand(trace))
}

upgrade <- function(old, new, driver = NULL, carry = NULL) {
  call_python("upgrade", old = existing(old, "old"), new = existing(new, "new"), driver = driver,
              carry = if (is.null(carry)) NULL else I(as.character(carry)))
}

lock_check <- function(path, rules = NULL) {
  call_python("lock_check", path = existing(path, "path"),
              rules = if (is.null(rules)) NULL else existing(rules, "rules"))
}

snapshot_save <- function(path) {
  call_python("snapshot_save", path = path.expand(path))
}

parity_record <- function(output, side = c("python", "r"), device = c("cpu", "cuda"), seed = NULL,
                          inputs = NULL, threads = 0L, python = NULL, rscript = NULL, timeout = 600) {
  call_python("parity_record", output = path.expand(output), side = match.arg(side),
              device = match.arg(device), seed = if (is.null(seed)) NULL else as.integer(seed),
              inputs_from = if (is.null(inputs)) NULL else existing(inputs, "inputs"),
              threads = as.integer(threads), python = python, rscript = rscript, timeout = timeout)
}

parity_compare <- function(a, b, rtol = NULL, atol = NULL) {
  call_python("parity_compare", a = existing(a, "a"), b = existing(b, "b"), rtol = rtol, atol = atol)
}

ci_matrix <- function(r = NULL, torch = NULL, cuda = NULL, keras = NULL, keras3 = NULL, tensorflow = NULL,
                      os = NULL, rules = NULL, min_confidence = NULL) {
  dims <- Filter(Negate(is.null), list(r = r, torch = torch, cuda = cuda, keras = keras, keras3 = keras3,
                                       tensorflow = tensorflow, os = os))
  if (!length(dims)) stop("rcompat: ci_matrix() needs at least one of r, torch, cuda, ...", call. = FALSE)
  call_python("ci_matrix", dimensions = lapply(dims, function(v) I(as.character(v))),
              rules = if (is.null(rules)) NULL else existing(rules, "rules"), min_confidence = min_confidence)
}

# -- commands reached through the CLI (rcompat COMMAND ... --format json) ---------------------------

# Named arguments become options: list(only = "cuda", strict = TRUE) -> --only cuda --strict.
cli_options <- function(options) {
  out <- character()
  for (name in names(options)) {
    value <- options[[name]]
    flag <- paste0("--", gsub("_", "-", name, fixed = TRUE))
    if (isTRUE(value)) out <- c(out, flag)
    else if (!is.null(value) && !isFALSE(value)) out <- c(out, as.vector(rbind(flag, as.character(value))))
  }
  out
}

cli_command <- function(words, paths = character(), options = list()) {
  if (length(options) && (is.null(names(options)) || any(!nzchar(names(options))))) {
    stop("rcompat: options must be named (e.g. device = \"cuda\")", call. = FALSE)
  }
  if (!rcompat_has_command(words)) {
    stop(sprintf("rcompat: this rcompat Python package has no `rcompat %s` command; upgrade it with rcompat::install_rcompat()",
                 paste(words, collapse = " ")), call. = FALSE)
  }
  call_python("cli_report", argv = I(c(words, cli_options(options), vapply(paths, path.expand, ""))))
}

fleet_report <- function(paths, ...) {
  cli_command(c("fleet", "report"), paths, list(...))
}

model_inspect <- function(paths, ...) {
  cli_command(c("model", "inspect"), paths, list(...))
}

model_check <- function(paths, ...) {
  cli_command(c("model", "check"), paths, list(...))
}

soak <- function(...) {
  cli_command("soak", character(), list(...))
}
