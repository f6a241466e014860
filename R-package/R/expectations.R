# testthat expectations for package maintainers: a failing finding fails the test with its id, title
# and remedy. testthat is only suggested: these functions need it when they run, as any test does.

need_testthat <- function() {
  if (!requireNamespace("testthat", quietly = TRUE)) {
    stop("rcompat: the expectations need the testthat package: install.packages(\"testthat\")", call. = FALSE)
  }
}

describe_findings <- function(rows) {
  paste(vapply(seq_len(nrow(rows)), function(i) {
    remedy <- rows$remedy[[i]]
    paste0(toupper(rows$status[[i]]), " ", rows$id[[i]], ": ", rows$title[[i]],
           if (!is.na(remedy) && nzchar(remedy)) paste0("\n  fix: ", remedy) else "")
  }, ""), collapse = "\n")
}

expect_stack_ok <- function(report = NULL, areas = NULL, strict = FALSE) {
  need_testthat()
  if (is.null(report)) report <- doctor(areas)
  if (!inherits(report, "rcompat_findings")) {
    stop("rcompat: expect_stack_ok() needs findings (doctor(), lock_check(), upgrade(), ...)", call. = FALSE)
  }
  failing <- c("fail", "error", if (strict) "warn")
  bad <- as.data.frame(report)[report$status %in% failing, , drop = FALSE]
  testthat::expect(nrow(bad) == 0,
                   sprintf("rcompat found %d problem%s:\n%s", nrow(bad), if (nrow(bad) == 1) "" else "s",
                           if (nrow(bad)) describe_findings(bad) else ""))
  invisible(report)
}

expect_finding <- function(report, id, status = c("ok", "skip")) {
  need_testthat()
  stopifnot(is.character(id), length(id) == 1)
  row <- as.data.frame(report)[report$id == id, , drop = FALSE]
  if (!nrow(row)) {
    testthat::expect(FALSE, sprintf("rcompat: no finding %s in this report (ids: %s)", id,
                                    paste(utils::head(report$id, 10), collapse = ", ")))
    return(invisible(report))
  }
  testthat::expect(row$status[[1]] %in% status,
                   sprintf("rcompat: %s is %s, expected %s:\n%s", id, row$status[[1]],
                           paste(status, collapse = " or "), describe_findings(row)))
  invisible(report)
}

skip_if_no_rcompat <- function() {
  need_testthat()
  if (!rcompat_available()) {
    testthat::skip("no Python with the rcompat package (run rcompat::install_rcompat())")
  }
  invisible(TRUE)
}
