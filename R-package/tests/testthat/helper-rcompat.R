# The tests that need Python skip unless a Python with the rcompat package is found the package's own
# way (RCOMPAT_PYTHON, RETICULATE_PYTHON, rcompat's virtualenv): pytest sets RCOMPAT_PYTHON to its own.
# RCOMPAT_FIXTURES names the checkout's fixtures/ (set by tests/rpkg), for the lockfile tests.
fixtures <- function(...) {
  root <- Sys.getenv("RCOMPAT_FIXTURES")
  if (!nzchar(root) || !dir.exists(root)) skip("RCOMPAT_FIXTURES does not name rcompat's fixtures/")
  file.path(root, ...)
}
