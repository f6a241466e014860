# Finding Python, in child R processes (a Python, once started, cannot change in this one).

run_r <- function(code, env = character()) {
  rscript <- file.path(R.home("bin"), "Rscript")
  script <- tempfile(fileext = ".R")
  writeLines(c(sprintf(".libPaths(c(%s))", paste(deparse(.libPaths()), collapse = "")), code), script)
  out <- suppressWarnings(system2(rscript, script, stdout = TRUE, stderr = TRUE, env = env))
  list(output = out, status = if (is.null(attr(out, "status"))) 0L else attr(out, "status"))
}

test_that("library(rcompat) starts no Python", {
  got <- run_r(c("library(rcompat)", "cat('started:', reticulate::py_available(initialize = FALSE), '\\n')"))
  expect_true(any(grepl("started: FALSE", got$output, fixed = TRUE)), info = paste(got$output, collapse = "\n"))
})

test_that("with no Python to use, one message says what was tried and what to run", {
  venv <- file.path(tempdir(), "no-such-venv")
  got <- run_r(c("library(rcompat)",
                 "r <- tryCatch(doctor(), error = function(e) e)",
                 "cat(class(r)[1], '\\n'); cat(conditionMessage(r), '\\n')"),
               env = c("RCOMPAT_PYTHON=", "RETICULATE_PYTHON=", paste0("RCOMPAT_VENV=", venv)))
  text <- paste(got$output, collapse = "\n")
  expect_match(text, "rcompat_no_python", fixed = TRUE)
  expect_match(text, "RCOMPAT_PYTHON: not set", fixed = TRUE)
  expect_match(text, "RETICULATE_PYTHON: not set", fixed = TRUE)
  expect_match(text, paste0(venv, ": not created"), fixed = TRUE)
  expect_match(text, "rcompat::install_rcompat()", fixed = TRUE)
  expect_false(grepl("Traceback", text, fixed = TRUE))
})

test_that("a Python without rcompat is named, with the command to run, never a traceback", {
  python <- if (file.exists("/usr/bin/python3")) "/usr/bin/python3" else unname(Sys.which("python3"))
  skip_if(!nzchar(python), "no python3 to stand for a Python without rcompat")
  has <- suppressWarnings(system2(python, c("-c", shQuote("import rcompat")), stdout = FALSE, stderr = FALSE))
  skip_if(has == 0, paste(python, "has the rcompat package"))
  got <- run_r(c("library(rcompat)", "r <- tryCatch(device(), error = function(e) conditionMessage(e))",
                 "cat(r, '\\n')"),
               env = c(paste0("RCOMPAT_PYTHON=", python), "PYTHONPATH=", "PYTHONNOUSERSITE=1"))
  text <- paste(got$output, collapse = "\n")
  expect_match(text, paste0(python, " (RCOMPAT_PYTHON): "), fixed = TRUE)
  expect_match(text, "No module named", fixed = TRUE)
  expect_match(text, "install_rcompat()", fixed = TRUE)
  expect_false(grepl("Traceback", text, fixed = TRUE))
})

test_that("a Python named by RCOMPAT_PYTHON that does not exist is said so", {
  got <- run_r(c("library(rcompat)", "r <- tryCatch(device(), error = function(e) conditionMessage(e))",
                 "cat(r, '\\n')"), env = "RCOMPAT_PYTHON=/nonexistent/bin/python")
  expect_match(paste(got$output, collapse = "\n"), "/nonexistent/bin/python (RCOMPAT_PYTHON): no such file",
               fixed = TRUE)
})

test_that("a use_python() made after library(rcompat) wins over RCOMPAT_PYTHON", {
  python <- Sys.getenv("RCOMPAT_PYTHON")
  skip_if(!nzchar(python) || !file.exists(python), "RCOMPAT_PYTHON does not name a Python with rcompat")
  got <- run_r(c("library(rcompat)",
                 sprintf("reticulate::use_python('%s', required = TRUE)", python),
                 "x <- explain('all good')",
                 "cat('used:', rcompat_python(), x$id, '\\n')"),
               env = c("RCOMPAT_PYTHON=/nonexistent/bin/python", "RETICULATE_PYTHON="))
  expect_true(any(grepl(paste("used:", python, "EXPLAIN-NO-MATCH"), got$output, fixed = TRUE)),
              info = paste(got$output, collapse = "\n"))
})
