# Results: a plain data.frame with the class "rcompat_result" in front (and "rcompat_findings" for the
# tables of findings), so subset(), dplyr and as.data.frame() treat it as any data.frame; the raw facts
# are attr(x, "facts"), the command attr(x, "command").

finding_columns <- c("id", "area", "status", "title", "message", "remedy", "evidence", "source", "confidence")
statuses <- c("ok", "warn", "fail", "skip", "error")
severity <- c("ok", "skip", "warn", "fail", "error")  # rcompat.model.SEVERITY, least to worst

empty_column <- function(type) {
  switch(type, logical = logical(0), integer = integer(0), double = numeric(0), character(0))
}

# One JSON table from Python -> a data.frame with exactly its columns, typed, also when it has no rows.
as_result <- function(doc) {
  columns <- as.character(unlist(doc$columns))
  types <- doc$types
  records <- doc$records
  if (is.null(records) || length(records) == 0 || NROW(records) == 0) {
    df <- as.data.frame(lapply(stats::setNames(columns, columns), function(col) {
      empty_column(if (is.null(types[[col]])) "character" else types[[col]])
    }), stringsAsFactors = FALSE, optional = TRUE)
  } else {
    df <- as.data.frame(records, stringsAsFactors = FALSE, optional = TRUE)
    for (col in setdiff(columns, names(df))) df[[col]] <- rep(NA, nrow(df))
    df <- df[, columns, drop = FALSE]
  }
  new_result(df, facts = doc$facts, command = if (is.null(doc$command)) "" else doc$command,
             findings = identical(doc$kind, "findings"), exit_code = doc$exit_code)
}

new_result <- function(df, facts = list(), command = "", findings = FALSE, exit_code = NULL) {
  rownames(df) <- NULL
  attr(df, "facts") <- facts
  attr(df, "command") <- command
  attr(df, "exit_code") <- exit_code
  class(df) <- c(if (findings) "rcompat_findings", "rcompat_result", "data.frame")
  df
}

as.data.frame.rcompat_result <- function(x, ...) {
  attr(x, "facts") <- NULL
  attr(x, "command") <- NULL
  attr(x, "exit_code") <- NULL
  class(x) <- "data.frame"
  x
}

`[.rcompat_result` <- function(x, ...) {
  out <- NextMethod()
  if (!is.data.frame(out)) return(out)
  for (a in c("facts", "command", "exit_code")) attr(out, a) <- attr(x, a)
  class(out) <- class(x)
  out
}

print.rcompat_result <- function(x, ...) {
  cat(format(x, colour = use_colour(), ...), sep = "\n")
  invisible(x)
}

use_colour <- function() {
  if (nzchar(Sys.getenv("NO_COLOR")) || identical(Sys.getenv("TERM"), "dumb")) return(FALSE)
  requireNamespace("cli", quietly = TRUE) && cli::num_ansi_colors() > 1
}

format.rcompat_result <- function(x, width = 80, colour = FALSE, verbose = FALSE, ...) {
  command <- attr(x, "command")
  title <- paste("rcompat", if (is.null(command) || !nzchar(command)) "result" else command)
  if (!inherits(x, "rcompat_findings") || !all(c("id", "area", "status", "title") %in% names(x))) {
    plain <- as.data.frame(x)
    old <- options(width = width)
    on.exit(options(old), add = TRUE)
    body <- if (nrow(plain)) utils::capture.output(print(plain, right = FALSE)) else
      paste0("(no rows; columns: ", paste(names(plain), collapse = ", "), ")")
    return(c(title, "", body))
  }
  format_findings(x, title, width, colour, verbose)
}

paint <- function(status, text, colour) {
  if (!colour) return(text)
  switch(status, ok = cli::col_green(text), warn = cli::col_yellow(text), fail = cli::col_red(text),
         skip = cli::col_cyan(text), error = cli::col_magenta(text), text)
}

# As the CLI's text renderer: findings by area, `  STATUS ID  title`, details of warn/fail/error
# (message and fix) indented, wrapped to `width`, a summary line painted with the worst status.
format_findings <- function(x, title, width, colour, verbose) {
  detail <- strrep(" ", 8)
  column <- function(name) if (name %in% names(x)) as.character(x[[name]]) else rep("", nrow(x))
  area <- column("area")
  area[is.na(area) | !nzchar(area)] <- "-"
  message <- column("message")
  remedy <- column("remedy")
  lines <- title
  for (a in unique(area)) {
    lines <- c(lines, "", sprintf("[%s]", a))
    for (i in which(area == a)) {
      status <- as.character(x$status[[i]])
      label <- formatC(toupper(status), width = -5)
      prefix <- sprintf("  %s %s ", label, formatC(as.character(x$id[[i]]), width = -22))
      hang <- if (nchar(prefix) <= width %/% 2) strrep(" ", nchar(prefix)) else detail
      head <- wrap(as.character(x$title[[i]]), prefix, width, hang)
      head[[1]] <- sub(label, paint(status, label, colour), head[[1]], fixed = TRUE)
      lines <- c(lines, head)
      shown <- verbose || status %in% c("warn", "fail", "error")
      msg <- message[[i]]
      if (!is.na(msg) && nzchar(msg) && (shown || status == "skip") && !identical(msg, x$title[[i]])) {
        lines <- c(lines, wrap(msg, detail, width))
      }
      if (shown && !is.na(remedy[[i]]) && nzchar(remedy[[i]])) {
        lines <- c(lines, wrap(paste("fix:", remedy[[i]]), detail, width))
      }
    }
  }
  counts <- table(factor(as.character(x$status), levels = statuses))
  present <- severity[severity %in% x$status]
  worst <- if (length(present)) present[[length(present)]] else "ok"
  summary <- paste(sprintf("%d %s", counts[counts > 0], names(counts)[counts > 0]), collapse = ", ")
  c(lines, "", paint(worst, paste("summary:", if (nzchar(summary)) summary else "no findings"), colour))
}

# Each line of `text` broken at spaces into lines of at most `width`; a word longer than a line is
# never cut (it stands alone), as the CLI does.
wrap <- function(text, indent, width = 80, subsequent = indent) {
  out <- character()
  for (para in strsplit(if (is.na(text)) "" else text, "\n", fixed = TRUE)[[1]]) {
    lead <- if (length(out)) subsequent else indent
    if (nchar(lead) + nchar(para) <= width) {
      out <- c(out, sub("\\s+$", "", paste0(lead, para)))
      next
    }
    line <- lead
    empty <- TRUE
    for (word in strsplit(trimws(para), "\\s+")[[1]]) {
      if (nchar(line) + (if (empty) 0 else 1) + nchar(word) <= width) {
        line <- paste0(line, if (empty) "" else " ", word)
        empty <- FALSE
        next
      }
      if (nzchar(trimws(line))) out <- c(out, sub("\\s+$", "", line))
      line <- paste0(subsequent, word)
      empty <- FALSE
    }
    if (!empty) out <- c(out, line)
  }
  if (!length(out)) out <- sub("\\s+$", "", indent)
  out
}
