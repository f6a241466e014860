# Results without Python: the class, zero rows, printing, subsetting (no Python needed here).

findings_doc <- function(status = c("ok", "fail")) {
  records <- data.frame(id = paste0("X-", seq_along(status)), area = "r", status = status,
                        title = paste("title", seq_along(status)), message = "a message",
                        remedy = "do this", evidence = "{}", source = "", confidence = "",
                        stringsAsFactors = FALSE)
  list(kind = "findings", command = "doctor", columns = rcompat:::finding_columns, types = list(),
       records = records, facts = list(r = list(version = "4.2.2")), exit_code = 1L)
}

test_that("a findings table is a data.frame with the columns, the class and the facts", {
  x <- rcompat:::as_result(findings_doc())
  expect_s3_class(x, c("rcompat_findings", "rcompat_result", "data.frame"), exact = TRUE)
  expect_identical(names(x), rcompat:::finding_columns)
  expect_identical(attr(x, "facts")$r$version, "4.2.2")
  plain <- as.data.frame(x)
  expect_identical(class(plain), "data.frame")
  expect_null(attr(plain, "facts"))
})

test_that("zero rows keep their columns and types", {
  doc <- list(kind = "table", command = "snapshot save", columns = c("section", "recorded", "error"),
              types = list(recorded = "logical"), records = list(), facts = list())
  x <- rcompat:::as_result(doc)
  expect_identical(nrow(x), 0L)
  expect_identical(names(x), c("section", "recorded", "error"))
  expect_type(x$recorded, "logical")
  expect_type(x$section, "character")
  expect_match(format(x), "no rows; columns: section, recorded, error", all = FALSE)
})

test_that("subset() and [ keep the class and the facts", {
  x <- rcompat:::as_result(findings_doc(c("ok", "fail", "warn")))
  bad <- subset(x, status %in% c("fail", "error"))
  expect_identical(bad$id, "X-2")
  expect_s3_class(bad, "rcompat_findings")
  expect_identical(attr(bad, "facts"), attr(x, "facts"))
  expect_identical(x[x$status == "ok", "id"], "X-1")
})

test_that("print shows the report as the CLI does: area, status, id, fix, summary, 80 columns", {
  x <- rcompat:::as_result(findings_doc(c("ok", "fail")))
  x$title[2] <- paste(rep("a long title", 12), collapse = " ")
  out <- format(x, colour = FALSE)
  expect_identical(out[1], "rcompat doctor")
  expect_true("[r]" %in% out)
  expect_true(any(grepl("^  OK    X-1 +title 1$", out)))
  expect_true(any(grepl("^  FAIL  X-2 ", out)))
  expect_true(any(grepl("^        fix: do this$", out)))
  expect_identical(out[length(out)], "summary: 1 ok, 1 fail")
  expect_true(all(nchar(out) <= 80))
  printed <- capture.output(print(x))
  expect_identical(printed, out)
})

test_that("a word longer than the line is never cut", {
  long <- strrep("x", 100)
  lines <- rcompat:::wrap(paste("short", long, "end"), "  ", 80)
  expect_identical(lines, c("  short", paste0("  ", long), "  end"))
})

test_that("colour paints the status word only, through cli", {
  skip_if_not_installed("cli")
  x <- rcompat:::as_result(findings_doc("fail"))
  withr_colours <- options(cli.num_colors = 256)
  on.exit(options(withr_colours))
  out <- format(x, colour = TRUE)
  expect_true(any(grepl("\033[", out, fixed = TRUE)))
  expect_identical(cli::ansi_strip(out), format(x, colour = FALSE))
})

test_that("the CLI options of fleet/model/soak are built from named arguments", {
  expect_identical(rcompat:::cli_options(list(device = "cuda", strict = TRUE, quiet = FALSE, min_nodes = 2)),
                   c("--device", "cuda", "--strict", "--min-nodes", "2"))
})

test_that("findings cut to a few columns print as a table of those columns", {
  x <- rcompat:::as_result(findings_doc(c("ok", "fail")))
  out <- format(x[, c("id", "status")], colour = FALSE)
  expect_identical(out[1], "rcompat doctor")
  expect_match(out[3], "^  id +status")
})
