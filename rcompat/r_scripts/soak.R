# The R side of `rcompat soak`, run in a child Rscript:
#   Rscript soak.R WORKLOAD ITERATIONS WARMUPS DEVICE PROGRESS_FILE SEED
# WORKLOAD is an R file defining `soak_iteration <- function(i)` (rcompat's default: soak_workload.R,
# the parity suite's cases through R torch). After every iteration it samples memory before and after
# a forced gc(), one JSON line each iteration, as rcompat/soak/child.py does for Python:
#   {"sample": i, "warmup": bool, "before": {...}, "after": {...}}
# Metrics: rss (/proc/self/statm), r_heap (after gc(): Ncells x 56 + Vcells x 8 bytes, R's ?Memory),
# and when R torch is loaded with CUDA: cuda_allocated, cuda_reserved (cuda_memory_stats()).
# {"fatal": ...} when the workload cannot be loaded or raises; {"end": ..., "done": true} at the end.

source(file.path(dirname(normalizePath(sub("^--file=", "",
  grep("^--file=", commandArgs(trailingOnly = FALSE), value = TRUE)[1L]))), "r_facts.R"))

emit <- function(x) {
  cat(rcompat_json(x), "\n", sep = "")
  flush(stdout())
}

args <- commandArgs(trailingOnly = TRUE)
workload <- args[1L]
iterations <- as.integer(args[2L])
warmups <- as.integer(args[3L])
device <- args[4L]
progress <- args[5L]
seed <- as.integer(args[6L])
page <- 4096
statm <- file("/proc/self/statm", "r")
rss <- function() {
  seek(statm, 0)
  as.numeric(strsplit(readLines(statm, n = 1L), " ", fixed = TRUE)[[1L]][2L]) * page
}

env <- new.env(parent = globalenv())
assign("soak_device", device, envir = env)
assign("soak_seed", seed, envir = env)
emit(list(step = "load workload"))
loaded <- tryCatch({ sys.source(workload, envir = env); TRUE }, error = function(e) conditionMessage(e))
if (!isTRUE(loaded)) {
  emit(list(fatal = paste0("cannot load ", workload, ": ", loaded)))
  quit(save = "no", status = 3L)
}
if (!is.function(env$soak_iteration)) {
  emit(list(fatal = paste0(workload, " must define soak_iteration <- function(i)")))
  quit(save = "no", status = 3L)
}

torch_cuda <- function() {
  "torch" %in% loadedNamespaces() && device == "cuda" &&
    isTRUE(tryCatch(torch::cuda_is_available(), error = function(e) FALSE))
}
cuda_stats <- function() {
  if (!torch_cuda()) return(list())
  s <- tryCatch(torch::cuda_memory_stats(), error = function(e) NULL)
  if (is.null(s)) return(list())
  list(cuda_allocated = s$allocated_bytes$all$current, cuda_reserved = s$reserved_bytes$all$current)
}

emit(list(facts = list(
  side = "r", interpreter = file.path(R.home("bin"), "Rscript"),
  r_version = paste(R.version$major, R.version$minor, sep = "."), workload = workload, device = device,
  torch_version = if ("torch" %in% loadedNamespaces()) as.character(utils::packageVersion("torch")) else NULL,
  cuda_available = torch_cuda()
)))

total <- warmups + iterations
work_s <- 0
sample_s <- 0
clock <- function() { t <- proc.time(); t[["user.self"]] + t[["sys.self"]] }  # CPU time, as the Python child
gc()
for (i in seq_len(total)) {
  t0 <- clock()
  failed <- tryCatch({ env$soak_iteration(i); NULL }, error = function(e) conditionMessage(e))
  t1 <- clock()
  if (!is.null(failed)) {
    emit(list(fatal = paste0("soak_iteration(", i, ") raised: ", failed)))
    quit(save = "no", status = 3L)
  }
  before <- c(list(rss = rss()), cuda_stats())
  g <- gc()
  after <- c(list(rss = rss(), r_heap = g[1L, 1L] * 56 + g[2L, 1L] * 8), cuda_stats())
  emit(list(sample = i - warmups - 1L, warmup = i <= warmups, before = before, after = after))
  if (i > warmups) {
    work_s <- work_s + (t1 - t0)
    sample_s <- sample_s + (clock() - t1)
  }
  if (i %% 10L == 0L || i == total) {
    writeLines(sprintf("iteration %d/%d%s", i, total, if (i <= warmups) " (warm-up)" else ""),
               paste0(progress, ".tmp"))
    file.rename(paste0(progress, ".tmp"), progress)
  }
}
close(statm)
limit <- tryCatch({
  m <- readLines("/proc/meminfo")
  as.numeric(sub("^MemAvailable: *([0-9]+) kB$", "\\1", grep("^MemAvailable:", m, value = TRUE))) * 1024
}, error = function(e) NULL)
emit(list(end = list(limits = list(host_available = limit),
                     timing = list(work_s = work_s, sample_s = sample_s, iterations = iterations,
                                   clock = "process CPU time")), done = TRUE))
