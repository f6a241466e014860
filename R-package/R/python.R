# Which Python rcompat uses, and the one bridge into it (rcompat.tools.from_r).
#
# Nothing here runs at library(rcompat): Python starts at the first call of a function that needs it,
# so a user's own reticulate::use_python() made after library(rcompat) still wins. The order:
#   1. a Python already running in this R session (reticulate initialised it: it cannot change);
#   2. a Python the user asked reticulate for (use_python()/use_virtualenv(), not yet started);
#   3. options(rcompat.python = ) or the RCOMPAT_PYTHON environment variable;
#   4. RETICULATE_PYTHON;
#   5. the virtualenv install_rcompat() creates (rcompat_venv()).
# rcompat runs inside this R process, so it must not start a second R through rpy2: RCOMPAT_HOST_PID
# names this process before Python starts, and the R engine then probes R with an Rscript child.

.rcompat <- new.env(parent = emptyenv())

rcompat_venv <- function() {
  getOption("rcompat.venv", Sys.getenv("RCOMPAT_VENV",
                                       unset = file.path(reticulate::virtualenv_root(), "r-rcompat")))
}

venv_python <- function(venv) file.path(venv, "bin", "python")

# What reticulate::use_python()/use_virtualenv() recorded in this session (reticulate keeps it in its
# namespace; read defensively, since it is not an API).
reticulate_requested <- function() {
  globals <- tryCatch(get(".globals", envir = asNamespace("reticulate")), error = function(e) NULL)
  if (is.null(globals)) return(NULL)
  requested <- c(globals$required_python_version, globals$use_python_versions)
  if (length(requested)) requested[[1]] else NULL
}

# list(python, via, set, tried): `set` says rcompat must point reticulate at `python` itself.
python_choice <- function() {
  if (reticulate::py_available(initialize = FALSE)) {
    return(list(python = reticulate::py_config()$python, set = FALSE, tried = character(),
                via = "the Python already running in this R session"))
  }
  requested <- reticulate_requested()
  if (!is.null(requested)) {
    return(list(python = requested, set = FALSE, tried = character(),
                via = "reticulate::use_python() in this session"))
  }
  tried <- character()
  option <- getOption("rcompat.python", "")
  env <- Sys.getenv("RCOMPAT_PYTHON")
  if (nzchar(option)) return(list(python = option, via = "options(rcompat.python)", set = TRUE, tried = tried))
  if (nzchar(env)) return(list(python = env, via = "RCOMPAT_PYTHON", set = TRUE, tried = tried))
  tried <- c(tried, "RCOMPAT_PYTHON: not set")
  reticulate_python <- Sys.getenv("RETICULATE_PYTHON")
  if (nzchar(reticulate_python)) {
    return(list(python = reticulate_python, via = "RETICULATE_PYTHON", set = FALSE, tried = tried))
  }
  tried <- c(tried, "RETICULATE_PYTHON: not set")
  venv <- rcompat_venv()
  if (file.exists(venv_python(venv))) {
    return(list(python = venv_python(venv), via = "rcompat's virtualenv", set = TRUE, tried = tried))
  }
  list(python = NULL, via = NULL, set = FALSE,
       tried = c(tried, sprintf("rcompat's virtualenv %s: not created", venv)))
}

no_python <- function(tried, running = NULL) {
  restart <- if (!is.null(running)) {
    sprintf("\nPython %s is already running in this R session; restart R after setting one of the above.",
            running)
  } else ""
  msg <- paste0(
    "rcompat found no Python with the rcompat package.\nTried:\n",
    paste0("  - ", tried, collapse = "\n"),
    "\nRun rcompat::install_rcompat() to create ", rcompat_venv(), " with it",
    " (or install_rcompat(\"path/to/rcompat.whl\") offline),",
    "\nor set RCOMPAT_PYTHON to a Python where `pip install rcompat` went.", restart)
  stop(structure(class = c("rcompat_no_python", "error", "condition"),
                 list(message = msg, call = NULL)))
}

first_line <- function(text) {
  lines <- strsplit(as.character(text), "\n", fixed = TRUE)[[1]]
  lines <- trimws(lines[nzchar(trimws(lines))])
  if (length(lines)) lines[[1]] else "unknown error"
}

# Imported with the working directory off sys.path: R's working directory often holds a folder named
# rcompat (a checkout's R package, R CMD check's rcompat.Rcheck/rcompat), which Python would otherwise
# import as an empty namespace package in place of the real one. With reticulate 1.41 and Python 3.13
# the import hook of an editable install (.pth) is not on sys.meta_path, so `import rcompat` fails;
# running the .pth files again (site.addsitedir) installs it. Only on failure.
import_bridge <- function() {
  scope <- reticulate::py_run_string(paste0(
    "def _rcompat_import(readd_sites):\n",
    "    import importlib, os, site, sys\n",
    "    if readd_sites:\n",
    "        for d in [p for p in sys.path if p.endswith(('site-packages', 'dist-packages')) and os.path.isdir(p)]:\n",
    "            site.addsitedir(d)\n",
    "    saved = list(sys.path)\n",
    "    here = os.path.realpath(os.getcwd())\n",
    "    sys.path[:] = [p for p in sys.path if os.path.realpath(p or '.') != here]\n",
    "    try:\n",
    "        if getattr(sys.modules.get('rcompat'), '__file__', 1) is None:\n",
    "            del sys.modules['rcompat']  # the namespace package of a folder, not rcompat\n",
    "        return importlib.import_module('rcompat.tools.from_r')\n",
    "    finally:\n",
    "        sys.path[:] = saved\n"), local = TRUE, convert = FALSE)  # kept out of the user's __main__
  import <- reticulate::py_to_r(reticulate::py_get_item(scope, "_rcompat_import"))
  tryCatch(import(FALSE), error = function(e) import(TRUE))
  reticulate::import("rcompat.tools.from_r", convert = TRUE)  # now in sys.modules
}

bridge <- function() {
  if (!is.null(.rcompat$bridge)) return(.rcompat$bridge)
  choice <- python_choice()
  if (is.null(choice$python)) no_python(choice$tried)
  running <- reticulate::py_available(initialize = FALSE)
  if (!running && !file.exists(choice$python)) {
    no_python(c(choice$tried, sprintf("%s (%s): no such file", choice$python, choice$via)))
  }
  Sys.setenv(RCOMPAT_HOST_PID = Sys.getpid())
  old <- Sys.getenv("RETICULATE_PYTHON", unset = NA)
  # only while Python starts, and put back after: rcompat's choice, and an empty RETICULATE_PYTHON
  # (which reticulate takes for a Python named "") unset
  if (isTRUE(choice$set)) Sys.setenv(RETICULATE_PYTHON = choice$python)
  else if (identical(old, "")) Sys.unsetenv("RETICULATE_PYTHON")
  on.exit(if (is.na(old)) Sys.unsetenv("RETICULATE_PYTHON") else Sys.setenv(RETICULATE_PYTHON = old), add = TRUE)
  module <- tryCatch(import_bridge(), error = function(e) {
    no_python(c(choice$tried, sprintf("%s (%s): %s", choice$python, choice$via, first_line(conditionMessage(e)))),
              running = if (running) choice$python else NULL)
  })
  module$set_host_facts(as.character(jsonlite::toJSON(host_facts(), auto_unbox = TRUE, null = "null")))
  .rcompat$bridge <- module
  .rcompat$python <- reticulate::py_config()$python
  module
}

# One call into Python: its JSON answer as an rcompat_result data.frame (or `value`), or one R error.
call_python <- function(name, ...) {
  args <- Filter(Negate(is.null), list(...))
  if (!length(args)) names(args) <- character()  # {} rather than []
  json <- bridge()$call(name, as.character(jsonlite::toJSON(args, auto_unbox = TRUE, null = "null",
                                                            digits = NA)))
  doc <- jsonlite::fromJSON(json, simplifyVector = TRUE, simplifyDataFrame = TRUE)
  if (!is.null(doc$error)) stop(paste("rcompat:", doc$error), call. = FALSE)
  if ("value" %in% names(doc)) return(doc$value)
  # the facts as they were, lists of records kept as lists (not data.frames)
  raw <- jsonlite::fromJSON(json, simplifyVector = TRUE, simplifyDataFrame = FALSE, simplifyMatrix = FALSE)
  doc$facts <- raw$facts
  as_result(doc)
}

host_facts <- function() {
  ip <- utils::installed.packages(fields = "Built")
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

rcompat_python <- function() {
  if (!is.null(.rcompat$python)) return(.rcompat$python)
  choice <- python_choice()
  if (is.null(choice$python)) NA_character_ else choice$python
}

rcompat_available <- function() {
  isTRUE(tryCatch({
    bridge()
    TRUE
  }, error = function(e) FALSE))
}

rcompat_has_command <- function(...) {
  isTRUE(call_python("has_command", words = I(c(...))))
}

host_is_r <- function() {
  isTRUE(bridge()$host_is_r())
}

install_rcompat <- function(source = NULL, envname = rcompat_venv(), python = NULL, extras = "frames",
                            pip_options = character(), force = FALSE) {
  if (is.null(source)) source <- "rcompat"
  if (!identical(source, "rcompat")) {
    if (!file.exists(source)) stop("install_rcompat(): ", source, " does not exist", call. = FALSE)
    source <- normalizePath(source)
  }
  spec <- if (length(extras) && nzchar(extras[[1]])) paste0(source, "[", paste(extras, collapse = ","), "]") else source
  if (force && dir.exists(envname)) unlink(envname, recursive = TRUE)
  if (!file.exists(venv_python(envname))) {
    reticulate::virtualenv_create(envname, python = python, packages = FALSE)
  }
  reticulate::virtualenv_install(envname, packages = spec, ignore_installed = FALSE, pip_options = pip_options)
  message(sprintf("rcompat is installed in %s; the next rcompat call uses it%s.", envname,
                  if (reticulate::py_available(initialize = FALSE)) " (after restarting R: Python already runs here)" else ""))
  invisible(venv_python(envname))
}
