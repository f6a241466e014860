# rcompat from R, for real: reticulate binds the Python in RETICULATE_PYTHON (the test runner's),
# rcompat probes this R without embedding a second one.

finding_columns <- c("id", "area", "status", "title", "message", "remedy", "evidence", "source", "confidence")
statuses <- c("ok", "warn", "fail", "skip", "error")

test_that("rcompat_doctor() returns a data.frame of findings with an R-VERSION row", {
  df <- rcompat_doctor("r")
  expect_s3_class(df, "data.frame")
  expect_identical(names(df), finding_columns)
  expect_true(all(df$status %in% statuses))
  expect_true("R-VERSION" %in% df$id)
  row <- df[df$id == "R-VERSION", ]
  expect_identical(row$status, "ok")
  expect_match(row$title, paste0(R.version$major, ".", R.version$minor), fixed = TRUE)
  expect_true(all(vapply(df$evidence, function(e) is.list(jsonlite::fromJSON(e, simplifyVector = FALSE)),
                         logical(1))))
})

test_that("inside R, rcompat knows its host is R and does not embed R through rpy2", {
  expect_true(rcompat_host_is_r())
  df <- rcompat_doctor("r")
  facts <- attr(df, "facts")
  expect_false(isTRUE(facts$r$rpy2$used))
  expect_match(facts$r$rpy2$reason, "inside R")
})

test_that("the Python reticulate binds is the one the test runner chose", {
  expect_identical(normalizePath(reticulate::py_config()$python),
                   normalizePath(Sys.getenv("RETICULATE_PYTHON")))
})

test_that("rcompat_explain() recognises a pasted error", {
  df <- rcompat_explain("Error: C stack usage  7971092 is too close to the limit")
  expect_identical(df$id, "EXPLAIN-C-STACK-USAGE")
  expect_identical(df$status, "fail")
  none <- rcompat_explain("all good")
  expect_identical(none$id, "EXPLAIN-NO-MATCH")
})

test_that("rcompat_lock_check() judges an renv.lock", {
  df <- rcompat_lock_check(file.path(rcompat_root, "fixtures", "lock", "renv-broken.lock"),
                           rules = file.path(rcompat_root, "fixtures", "lock", "rules.toml"))
  expect_true("FIX-R45-TORCH-OLD" %in% df$id[df$status == "fail"])
  expect_error(rcompat_lock_check(file.path(rcompat_root, "fixtures", "lock", "corrupt.lock")),
               "not valid JSON")
})

test_that("rcompat_device() answers cpu or cuda with a reason", {
  df <- rcompat_device()
  expect_identical(names(df), c("device", "reason", "remedy"))
  expect_true(df$device %in% c("cpu", "cuda"))
  expect_true(nchar(df$reason) > 0)
})

test_that("rcompat_elf_missing() lists what libR.so cannot bind (nothing, on a working R)", {
  libR <- file.path(R.home("lib"), "libR.so")
  skip_if_not(file.exists(libR), "R was built without a shared libR")
  df <- rcompat_elf_missing(libR)
  expect_identical(names(df), c("kind", "name", "version", "needed_by", "loader_message", "explanation"))
  expect_identical(nrow(df), 0L)
  expect_identical(normalizePath(attr(df, "facts")$root), normalizePath(libR))
})

test_that("rcompat_snapshot_save() records R from the host facts", {
  path <- tempfile(fileext = ".json")
  df <- rcompat_snapshot_save(path)
  expect_true(all(df$recorded[df$section %in% c("r", "python")]))
  snap <- jsonlite::fromJSON(path, simplifyVector = FALSE)
  expect_identical(snap$r$via, "R host")
  expect_identical(snap$r$packages$jsonlite$version, as.character(packageVersion("jsonlite")))
})

test_that("rcompat_abi_diff() of a library against itself has no changes, with the frame's columns", {
  lib <- file.path(R.home("lib"), "libR.so")
  skip_if_not(file.exists(lib), "R was built without a shared libR")
  df <- rcompat_abi_diff(lib, lib)
  expect_identical(nrow(df), 0L)
  expect_true(all(c("change", "kind", "name", "version") %in% names(df)))
})

test_that("rcompat_race() runs one serialized CPU trial in a child and returns one row", {
  skip_if_not(reticulate::py_module_available("torch"),
              "torch not installed in this Python: no torch==2.13.0 wheel for it on disk")
  df <- rcompat_race(device = "cpu", iterations = 2, workers = 1, trials = 1, mode = "serialized",
                     timeout = 60, r_stack_check = FALSE)
  expect_identical(nrow(df), 1L)
  expect_identical(df$mode, "serialized")
  expect_identical(df$device, "cpu")
  expect_true(is.character(df$outcome) && nchar(df$outcome) > 0)
})
