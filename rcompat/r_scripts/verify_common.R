# Shared by the verify_*.R scripts: JSON-lines progress that rcompat's child runner parses.
# {"step": ...} is printed (and flushed) before each step, so a crash that kills R still names it.
#
# The JSON is written by r_facts.R's rcompat_json() (base R only), the one JSON writer of these
# scripts; the verify scripts run as `Rscript DIR/verify_X.R`, and r_facts.R sits in the same DIR.
source(file.path(dirname(normalizePath(sub("^--file=", "",
  grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)[1L]))), "r_facts.R"))

emit <- function(...) {
  cat(rcompat_json(list(...)), "\n", sep = "")
  flush(stdout())
}

step <- function(name, expr) {
  emit(step = name)
  tryCatch(expr, error = function(e) {
    emit(error = conditionMessage(e), step = name)
    quit(save = "no", status = 1L)
  })
}
