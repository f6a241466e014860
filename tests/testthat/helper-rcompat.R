# Sourced by testthat before the tests: load rcompat.R from this checkout. RCOMPAT_ROOT is set by
# tests/tools/test_from_r.py; run by hand from the repository root it falls back to ../.. of here.
rcompat_root <- Sys.getenv("RCOMPAT_ROOT", normalizePath(file.path(getwd(), "..", "..")))
source(file.path(rcompat_root, "rcompat", "r_scripts", "rcompat.R"))
