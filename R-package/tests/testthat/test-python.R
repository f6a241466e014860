# rcompat from R, for real: the package finds its Python (RCOMPAT_PYTHON when pytest runs this), and
# probes this R without embedding a second one.

skip_if_no_rcompat()

test_that("doctor() returns a data.frame of findings with an R-VERSION row", {
  df <- doctor("r")
  expect_s3_class(df, "rcompat_findings")
  expect_identical(names(df), finding_columns <- rcompat:::finding_columns)
  expect_true(all(df$status %in% c("ok", "warn", "fail", "skip", "error")))
  row <- df[df$id == "R-VERSION", ]
  expect_identical(row$status, "ok")
  expect_match(row$title, paste0(R.version$major, ".", R.version$minor), fixed = TRUE)
  expect_true(all(vapply(df$evidence, function(e) is.list(jsonlite::fromJSON(e, simplifyVector = FALSE)),
                         logical(1))))
  expect_match(capture.output(print(df))[1], "^rcompat doctor")
})

test_that("inside R, rcompat knows its host is R and does not embed R through rpy2", {
  expect_true(host_is_r())
  facts <- attr(doctor("r"), "facts")
  expect_false(isTRUE(facts$r$rpy2$used))
  expect_match(facts$r$rpy2$reason, "inside R")
})

test_that("the Python used is the one RCOMPAT_PYTHON names, when it names one", {
  wanted <- Sys.getenv("RCOMPAT_PYTHON")
  skip_if(!nzchar(wanted), "RCOMPAT_PYTHON not set")
  expect_identical(normalizePath(reticulate::py_config()$python), normalizePath(wanted))
  expect_identical(normalizePath(rcompat_python()), normalizePath(wanted))
})

test_that("explain() recognises a pasted error, and says when nothing matched", {
  df <- explain("Error: C stack usage  7971092 is too close to the limit")
  expect_identical(df$id, "EXPLAIN-C-STACK-USAGE")
  expect_identical(df$status, "fail")
  expect_identical(explain("all good")$id, "EXPLAIN-NO-MATCH")
})

test_that("lock_check() judges an renv.lock; a corrupt one is one R error", {
  df <- lock_check(fixtures("lock", "renv-broken.lock"), rules = fixtures("lock", "rules.toml"))
  expect_true("FIX-R45-TORCH-OLD" %in% df$id[df$status == "fail"])
  expect_error(lock_check(fixtures("lock", "corrupt.lock")), "^rcompat: .*not valid JSON")
  expect_error(lock_check(file.path(tempdir(), "absent.lock")), "does not exist")
})

test_that("device() answers cpu or cuda with a reason", {
  df <- device()
  expect_identical(names(df), c("device", "reason", "remedy"))
  expect_true(df$device %in% c("cpu", "cuda"))
  expect_true(nchar(df$reason) > 0)
})

test_that("elf_missing() of libR.so: zero rows, its columns, the root in the facts", {
  libR <- file.path(R.home("lib"), "libR.so")
  skip_if_not(file.exists(libR), "R was built without a shared libR")
  df <- elf_missing(libR)
  expect_identical(names(df), c("kind", "name", "version", "needed_by", "loader_message", "explanation"))
  expect_identical(nrow(df), 0L)
  expect_identical(normalizePath(attr(df, "facts")$root), normalizePath(libR))
})

test_that("abi_diff() of a library against itself has no changes", {
  lib <- file.path(R.home("lib"), "libR.so")
  skip_if_not(file.exists(lib), "R was built without a shared libR")
  skip_if_not(reticulate::py_module_available("pandas"), "pandas not installed in rcompat's Python")
  df <- abi_diff(lib, lib)
  expect_identical(nrow(df), 0L)
  expect_true(all(c("change", "kind", "name", "version") %in% names(df)))
})

test_that("snapshot_save() records R from the host facts", {
  path <- tempfile(fileext = ".json")
  df <- snapshot_save(path)
  expect_type(df$recorded, "logical")
  expect_true(all(df$recorded[df$section %in% c("r", "python")]))
  snap <- jsonlite::fromJSON(path, simplifyVector = FALSE)
  expect_identical(snap$r$via, "R host")
  expect_identical(snap$r$packages$jsonlite$version, as.character(packageVersion("jsonlite")))
})

test_that("ci_matrix() returns every cell with run and reason; excluded cells say why", {
  m <- ci_matrix(r = c("4.4", "4.5"), torch = c("0.11.1", "0.13.0"), cuda = "cpu", min_confidence = "unverified")
  expect_identical(names(m), c("r", "torch", "cuda", "run", "reason"))
  expect_identical(nrow(m), 4L)
  expect_identical(paste(m$r, m$torch), c("4.4 0.11.1", "4.4 0.13.0", "4.5 0.11.1", "4.5 0.13.0"))
  gone <- m[!m$run, ]
  expect_identical(gone$r, "4.5")
  expect_identical(gone$torch, "0.11.1")
  expect_match(gone$reason, "R-R45-TORCH-TENSOR-SEGV")
  expect_error(ci_matrix(r = "4.x"), "not a version")
})

test_that("upgrade() of a root against itself: findings with the documented columns", {
  root <- file.path(tempdir(), "upgrade-root")
  dir.create(file.path(root, "usr", "lib"), recursive = TRUE, showWarnings = FALSE)
  file.copy(file.path(R.home("lib"), "libR.so"), file.path(root, "usr", "lib"))
  df <- upgrade(root, root)
  expect_s3_class(df, "rcompat_findings")
  expect_identical(names(df), rcompat:::finding_columns)
  expect_true("UPGRADE-ROOTS" %in% df$id)
})

test_that("expect_stack_ok() fails with the finding's title and remedy", {
  bad <- explain("Error: C stack usage  7971092 is too close to the limit")
  failure <- expect_failure(expect_stack_ok(bad), "R ran out of C stack")
  expect_failure(expect_stack_ok(bad), "fix: Call R only from R's main thread")
  expect_success(expect_stack_ok(explain("all good")))
  expect_success(expect_finding(bad, "EXPLAIN-C-STACK-USAGE", status = "fail"))
  expect_failure(expect_finding(bad, "EXPLAIN-C-STACK-USAGE"), "is fail, expected ok or skip")
  expect_failure(expect_finding(bad, "NO-SUCH-ID"), "no finding NO-SUCH-ID")
})

test_that("parity_record() and parity_compare(): one row per case, then findings", {
  skip_if_not(reticulate::py_module_available("torch"), "torch not installed in rcompat's Python")
  a <- tempfile(fileext = ".npz")
  rec <- parity_record(a)
  expect_identical(names(rec), c("case", "status", "outputs", "message"))
  expect_true(all(rec$status %in% c("ok", "skip", "error")))
  cmp <- parity_compare(a, a)
  expect_identical(names(cmp), rcompat:::finding_columns)
  expect_false(any(cmp$status %in% c("fail", "error")))
})

test_that("race() runs one serialized CPU trial in a child and returns one row", {
  skip_if_not(reticulate::py_module_available("torch"), "torch not installed in rcompat's Python")
  df <- race(device = "cpu", iterations = 2, workers = 1, trials = 1, mode = "serialized", timeout = 60,
             r_stack_check = FALSE)
  expect_identical(nrow(df), 1L)
  expect_identical(df$mode, "serialized")
  expect_true(is.character(df$outcome) && nchar(df$outcome) > 0)
})

test_that("commands this rcompat lacks are one clear error", {
  expect_false(rcompat_has_command("no-such-command"))
  expect_true(rcompat_has_command("elf", "symbols"))
})

test_that("fleet_report() reads doctor reports through the CLI, where this rcompat has it", {
  skip_if_not(rcompat_has_command("fleet", "report"), "no `rcompat fleet report` in this rcompat yet")
  dir <- file.path(tempdir(), "fleet")
  dir.create(dir, showWarnings = FALSE)
  python <- rcompat_python()
  for (node in c("node1", "node2")) {
    system2(python, c("-m", "rcompat", "doctor", "--only", "system", "--format", "json", "-o",
                      file.path(dir, paste0(node, ".json"))), stdout = FALSE, stderr = FALSE)
  }
  df <- fleet_report(dir)
  expect_identical(names(df), rcompat:::finding_columns)
  expect_gt(nrow(df), 0)
  expect_error(fleet_report(file.path(tempdir(), "absent-dir")), "^rcompat: ")
})

for (cmd in list(c("model", "inspect"), c("model", "check"), "soak")) local({
  words <- cmd
  test_that(paste0("`rcompat ", paste(words, collapse = " "), "` from R: a bad input is one R error"), {
    skip_if_not(rcompat_has_command(words), paste0("no `rcompat ", paste(words, collapse = " "), "` yet"))
    absent <- file.path(tempdir(), "absent.pt")
    run <- switch(paste(words, collapse = " "), "model inspect" = function() model_inspect(absent),
                  "model check" = function() model_check(absent), soak = function() soak(iterations = -1))
    expect_error(run(), "^rcompat: ")
  })
})

test_that("model_inspect() reads a torch.save() file through the CLI, where this rcompat has it", {
  skip_if_not(rcompat_has_command("model", "inspect"), "no `rcompat model inspect` in this rcompat yet")
  skip_if_not(reticulate::py_module_available("torch"), "torch not installed in rcompat's Python")
  path <- file.path(tempdir(), "weights.pt")
  torch <- reticulate::import("torch")
  torch$save(reticulate::dict(w = torch$zeros(2L)), path)
  df <- model_inspect(path)
  expect_s3_class(df, "rcompat_result")
  expect_identical(nrow(df), 1L)
  expect_identical(normalizePath(df$path), normalizePath(path))
  expect_identical(attr(df, "command"), "model inspect")
})

test_that("soak() runs a short soak through the CLI, where this rcompat has it", {
  skip_if_not(rcompat_has_command("soak"), "no `rcompat soak` in this rcompat yet")
  skip_if_not(reticulate::py_module_available("torch"), "torch not installed in rcompat's Python")
  df <- soak(iterations = 12, warmups = 1, quiet = TRUE)
  expect_identical(names(df), rcompat:::finding_columns)
  expect_true("SOAK-RUN" %in% df$id)
  expect_identical(attr(df, "command"), "soak")
})
