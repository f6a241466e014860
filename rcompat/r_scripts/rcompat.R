# rcompat from R: source("rcompat/r_scripts/rcompat.R"), then call rcompat_doctor() and friends.
#
# Each function calls the Python package through reticulate and returns a data.frame. The Python is
# the one reticulate binds: set RETICULATE_PYTHON to the virtualenv where rcompat is installed before
# the first call (or call reticulate::use_python() yourself before sourcing this file).
#
# rcompat runs inside this R process, so it must not start a second R through rpy2: RCOMPAT_HOST_PID
# names this process before Python starts in it, and what this R knows about itself (version, .libPaths(), package versions)
# is handed to Python once. rcompat then probes R with an Rscript child instead of embedding R.

.rcompat <- new.env(parent = emptyenv())

rcompat_host_facts <- function(packages = NULL) {
  ip <- utils::installed.packages(fields = "Built")
  if (!is.null(packages)) ip <- ip[ip[, "Package"] %in% packages, , drop = FALSE]
  ip <- ip[!duplicated(ip[, "Package"]), , drop = FALSE]  # first on .libPaths() wins, as library() does
  pkgs <- lapply(seq_len(nrow(ip)), function(i) {
    list(version = unname(ip[i, "Version"]), libpath = unname(ip[i, "LibPath"]),
         built = if (is.na(ip[i, "Built"])) "" else unname(ip[i, "Built"]))
  })
  names(pkgs) <- ip[, "Package"]
  list(version = paste(R.version$major, R.version$minor, sep = "."),
       version_string = R.version.string, platform = R.version$platform,
       svn_rev = R.version$`svn rev`, r_home = R.home(), lib_paths = .libPaths(),
       packages = pkgs)
}

# Measured with reticulate 1.41 and Debian 13's Python 3.13: the venv's site-packages is on sys.path
# but the import hook an editable install's .pth file installs is not on sys.meta_path, so
# `import rcompat` fails (site.getsitepackages() names dist-packages dirs there, not the venv's).
# Running the .pth files of the site-packages dirs on sys.path again (site.addsitedir) installs the
# hook; only done when the import failed.
rcompat_import_bridge <- function() {
  tryCatch(reticulate::import("rcompat.tools.from_r", convert = TRUE), error = function(e) {
    reticulate::py_run_string(paste0(
      "import os, site, sys\n",
      "for _d in [p for p in sys.path if p.endswith(('site-packages', 'dist-packages')) and os.path.isdir(p)]:\n",
      "    site.addsitedir(_d)\n"))
    reticulate::import("rcompat.tools.from_r", convert = TRUE)
  })
}

rcompat_bridge <- function() {
  if (!is.null(.rcompat$bridge)) return(.rcompat$bridge)
  if (!requireNamespace("reticulate", quietly = TRUE))
    stop("rcompat needs the reticulate package: install.packages(\"reticulate\")", call. = FALSE)
  if (!requireNamespace("jsonlite", quietly = TRUE))
    stop("rcompat needs the jsonlite package: install.packages(\"jsonlite\")", call. = FALSE)
  Sys.setenv(RCOMPAT_HOST_PID = Sys.getpid())
  bridge <- tryCatch(rcompat_import_bridge(), error = function(e) {
    stop("cannot import rcompat in the Python reticulate binds (",
         reticulate::py_config()$python, "): ", conditionMessage(e),
         ". Set RETICULATE_PYTHON to the Python where rcompat is installed.", call. = FALSE)
  })
  bridge$set_host_facts(as.character(jsonlite::toJSON(rcompat_host_facts(), auto_unbox = TRUE, null = "null")))
  .rcompat$bridge <- bridge
  bridge
}

# One JSON table from Python -> a data.frame with exactly its columns (also when it has no rows).
rcompat_frame <- function(json) {
  doc <- jsonlite::fromJSON(json, simplifyVector = TRUE, simplifyDataFrame = TRUE)
  columns <- unlist(doc$columns)
  records <- doc$records
  if (is.null(records) || length(records) == 0 || NROW(records) == 0) {
    df <- as.data.frame(setNames(replicate(length(columns), character(0), simplify = FALSE), columns),
                        stringsAsFactors = FALSE)
  } else {
    df <- as.data.frame(records, stringsAsFactors = FALSE)
    for (col in setdiff(columns, names(df))) df[[col]] <- NA
    df <- df[, columns, drop = FALSE]
  }
  attr(df, "facts") <- doc$facts
  df
}

rcompat_doctor <- function(areas = NULL, timeout = NULL) {
  b <- rcompat_bridge()
  rcompat_frame(b$doctor(if (is.null(areas)) NULL else as.list(areas), timeout))
}

rcompat_elf_missing <- function(path) {
  rcompat_frame(rcompat_bridge()$elf_missing(normalizePath(path, mustWork = TRUE)))
}

rcompat_abi_diff <- function(old, new) {
  rcompat_frame(rcompat_bridge()$abi_diff(normalizePath(old, mustWork = TRUE),
                                          normalizePath(new, mustWork = TRUE)))
}

rcompat_device <- function() {
  rcompat_frame(rcompat_bridge()$device())
}

# Arguments as rcompat.race.run(): device, iterations, workers, mode, timeout, trials, seed, ...
rcompat_race <- function(...) {
  b <- rcompat_bridge()
  rcompat_frame(do.call(b$race, list(...)))
}

rcompat_explain <- function(text) {
  rcompat_frame(rcompat_bridge()$explain(paste(text, collapse = "\n")))
}

rcompat_lock_check <- function(path, rules = NULL) {
  rcompat_frame(rcompat_bridge()$lock_check(normalizePath(path, mustWork = TRUE), rules))
}

rcompat_snapshot_save <- function(path) {
  rcompat_frame(rcompat_bridge()$snapshot_save(path.expand(path)))
}

rcompat_host_is_r <- function() {
  isTRUE(rcompat_bridge()$host_is_r())
}
