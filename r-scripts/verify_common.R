# Shared by the verify_*.R scripts: JSON-lines progress that rcompat's child runner parses.
# {"step": ...} is printed (and flushed) before each step, so a crash that kills R still names it.

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
