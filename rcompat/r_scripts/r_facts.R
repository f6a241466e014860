# Facts about this R, printed as one JSON line: version, platform, library paths, the deep-learning
# packages' DESCRIPTIONs and the Python reticulate would bind.
#
# rcompat's rpy2 worker source()s this file and calls rcompat_core_facts(); when rcompat runs inside
# R (reticulate called it) it runs the file with Rscript instead. Nothing here loads torch, keras or
# tensorflow, and nothing initialises Python:
#   Rscript r_facts.R [core] [reticulate] [discover] [lean]     (no argument: the first three)
# 'discover' lets reticulate::py_discover_config() search for a Python (it runs candidate Pythons as
# subprocesses; it does not start Python in this process). 'lean' loads reticulate's namespace with
# S4 dispatch off (see rcompat_reticulate_namespace). Only base R is used, so the script works where
# jsonlite is missing.

rcompat_packages <- c("torch", "keras", "keras3", "tensorflow", "reticulate", "RcppCNPy", "Rcpp")

rcompat_json <- function(x) {
  esc <- function(s) {
    s <- enc2utf8(as.character(s))
    # Invalid UTF-8 (R 4.5's read.dcf quotes a corrupt DESCRIPTION's bytes in its error message)
    # would make gsub() fail the whole document; such bytes are written as <xx>.
    bad <- !validUTF8(s)
    s[bad] <- iconv(s[bad], "UTF-8", "UTF-8", sub = "byte")
    s <- gsub("\\", "\\\\", s, fixed = TRUE)
    s <- gsub("\"", "\\\"", s, fixed = TRUE)
    s <- gsub("\n", "\\n", s, fixed = TRUE)
    s <- gsub("\r", "\\r", s, fixed = TRUE)
    s <- gsub("\t", "\\t", s, fixed = TRUE)
    gsub("[[:cntrl:]]", " ", s)
  }
  scalar <- function(v) {
    if (is.na(v)) return("null")
    if (is.logical(v)) return(if (v) "true" else "false")
    if (is.numeric(v)) return(format(v, scientific = FALSE, trim = TRUE))
    paste0("\"", esc(v), "\"")
  }
  if (is.null(x)) return("null")
  if (is.list(x)) {
    items <- vapply(x, rcompat_json, "")
    if (!is.null(names(x)))
      return(paste0("{", paste0("\"", esc(names(x)), "\":", items, collapse = ","), "}"))
    return(paste0("[", paste(items, collapse = ","), "]"))
  }
  if (length(x) == 1L) return(scalar(x))
  paste0("[", paste(vapply(as.list(x), scalar, ""), collapse = ","), "]")
}

# NULL instead of NA or "", so absent facts read as null in JSON.
rcompat_env <- function(name) {
  value <- Sys.getenv(name, unset = NA)
  if (is.na(value)) NULL else value
}

# The DESCRIPTION file itself, not Meta/package.rds: a half-written install or a hand-edited
# DESCRIPTION is exactly what should show up here. Errors stay with this package.
rcompat_package_fact <- function(pkg, lib_paths = .libPaths()) {
  dirs <- file.path(lib_paths, pkg)
  dirs <- dirs[dir.exists(dirs)]
  if (!length(dirs)) return(list(status = "absent"))
  first <- dirs[[1]]
  fact <- tryCatch({
    desc_file <- file.path(first, "DESCRIPTION")
    if (!file.exists(desc_file))
      stop("no DESCRIPTION file (a partial or failed install)")
    d <- withCallingHandlers(read.dcf(desc_file),
                             warning = function(w) stop(conditionMessage(w)))
    field <- function(f) if (f %in% colnames(d) && !is.na(d[1, f])) unname(d[1, f]) else NULL
    if (nrow(d) != 1L || is.null(field("Version")))
      stop("DESCRIPTION has no Version field")
    if (!identical(field("Package"), pkg))
      stop(sprintf("DESCRIPTION names package '%s', not '%s'", field("Package"), pkg))
    list(status = "installed", version = field("Version"), built = field("Built"),
         needs_compilation = field("NeedsCompilation"),
         system_requirements = field("SystemRequirements"))
  }, error = function(e) list(status = "error", error = conditionMessage(e)))
  fact$path <- normalizePath(first, mustWork = FALSE)
  fact$also_in <- as.list(dirs[-1L])
  fact
}

rcompat_core_facts <- function(packages = rcompat_packages) {
  v <- R.version
  list(
    version = list(string = R.version.string, major = v$major, minor = v$minor,
                   number = paste(v$major, v$minor, sep = "."), status = v$status,
                   svn_rev = v[["svn rev"]], nickname = v$nickname),
    platform = v$platform, os = v$os, arch = v$arch,
    r_home = R.home(),
    lib_paths = as.list(.libPaths()),
    packages = stats::setNames(lapply(packages, rcompat_package_fact), packages),
    pid = Sys.getpid(),
    # What sessionInfo() prints under "Matrix products" and "locale" (read, nothing loaded).
    session = list(blas = tryCatch(extSoftVersion()[["BLAS"]], error = function(e) NULL),
                   lapack = tryCatch(La_library(), error = function(e) NULL),
                   lapack_version = tryCatch(La_version(), error = function(e) NULL),
                   locale = Sys.getlocale(), utf8 = isTRUE(l10n_info()[["UTF-8"]]))
  )
}

# reticulate's namespace. reticulate Imports Matrix (its DESCRIPTION), and loadNamespace() caches the
# S4 methods of a namespace it loads while S4 dispatch is on (methods::cacheMetaData): for Matrix
# that is ~0.8 s of CPU, more than the rest of a discovery child, for methods discovery never meets
# (it handles file paths, strings and version numbers, and no S4 object). `lean` loads the namespace
# with dispatch off, so loadNamespace skips that caching. Dispatch then stays off for this R
# (R does not support turning it back on), so only a throwaway Rscript child asks for `lean`;
# rcompat.r.facts asks again without it when a lean child reports an error.
rcompat_reticulate_namespace <- function(lean = FALSE) {
  if (lean && !isNamespaceLoaded("reticulate") && .isMethodsDispatchOn())
    .isMethodsDispatchOn(FALSE)
  asNamespace("reticulate")
}

# reticulate's choice of Python without initialising it. The environment variables are read
# directly. py_discover_config() is asked only when it cannot change the machine: in reticulate
# 1.28, with a Miniconda lacking its r-reticulate environment, or a conda with no environment, it
# calls conda_create(); then only the variables are reported.
rcompat_reticulate_facts <- function(discover = TRUE, lean = FALSE) {
  vars <- c("RETICULATE_PYTHON", "RETICULATE_PYTHON_ENV", "RETICULATE_PYTHON_FALLBACK",
            "RETICULATE_MINICONDA_ENABLED", "RETICULATE_USE_MANAGED_VENV")
  out <- list(env = stats::setNames(lapply(vars, rcompat_env), vars), method = "environment")
  if (!any(dir.exists(file.path(.libPaths(), "reticulate")))) {
    out$method <- "none"
    out$note <- "reticulate is not installed"
    return(out)
  }
  if (!discover) return(out)
  ns <- tryCatch(rcompat_reticulate_namespace(lean), error = function(e) e)
  if (inherits(ns, "error")) {
    out$discover_error <- conditionMessage(ns)
    return(out)
  }
  would_create <- tryCatch({
    internal <- function(name) get0(name, envir = ns, inherits = FALSE)
    mc <- internal("miniconda_conda"); mc_env <- internal("miniconda_python_envpath")
    ci <- internal("conda_installed"); cl <- internal("conda_list")
    (!is.null(mc) && file.exists(mc()) && !is.null(mc_env) && !file.exists(mc_env())) ||
      (!is.null(ci) && isTRUE(ci()) && !is.null(cl) && nrow(cl()) == 0L)
  }, error = function(e) NA)
  if (!isFALSE(would_create)) {
    out$note <- if (isTRUE(would_create))
      "py_discover_config() not asked: it would create a conda environment" else
      "py_discover_config() not asked: cannot tell whether it would create a conda environment"
    return(out)
  }
  cfg <- tryCatch(reticulate::py_discover_config(), error = function(e) e)
  if (inherits(cfg, "error")) {
    out$discover_error <- conditionMessage(cfg)
    return(out)
  }
  out$method <- "py_discover_config"
  if (is.null(cfg)) {
    out$note <- "py_discover_config() found no Python (reticulate >= 1.41 would use a managed uv environment)"
    return(out)
  }
  field <- function(f) if (is.null(cfg[[f]]) || !length(cfg[[f]])) NULL else as.character(cfg[[f]])[1L]
  out$python <- field("python")
  out$libpython <- field("libpython")
  out$pythonhome <- field("pythonhome")
  out$version <- field("version")
  out$version_string <- field("version_string")
  out$virtualenv <- field("virtualenv")
  out$conda <- isTRUE(cfg$conda)
  out$forced <- field("forced")
  out$numpy <- if (!is.null(cfg$numpy)) as.character(cfg$numpy$version) else NULL
  out$candidates <- as.list(as.character(cfg$python_versions))
  # Proof that asking did not start Python here.
  out$python_initialized <- tryCatch(reticulate::py_available(initialize = FALSE),
                                     error = function(e) NA)
  out
}

if (sys.nframe() == 0L) {
  args <- commandArgs(trailingOnly = TRUE)
  if (!length(args)) args <- c("core", "reticulate", "discover")
  facts <- list()
  if ("core" %in% args) facts$core <- rcompat_core_facts()
  if ("reticulate" %in% args)
    facts$reticulate <- rcompat_reticulate_facts(discover = "discover" %in% args, lean = "lean" %in% args)
  cat(rcompat_json(list(r_facts = facts)), "\n", sep = "")
}
