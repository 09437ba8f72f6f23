# sdcMicro's addNoise methods on testdata.csv's expend, income, savings, with the random
# normal numbers each run drew, for tests/test_noise_methods.py (which rebuilds R's
# output from R's draws with sdcbayes's formulas and never needs R).
#
# Usage (R 4.2.2, sdcMicro 5.8.0; see noise/README.md):
#   R_LIBS=<lib> Rscript tests/data/sdcmicro_r/noise.R \
#       /path/to/shared/data/sdcmicro tests/data/sdcmicro_r/noise
#
# Argument 1: the folder of sdcMicro's data sets as CSV (testdata.csv): R and Python read
# the same bytes. Argument 2: the output folder (created). Numbers are written with
# sprintf("%.17g"), so they round-trip exactly to doubles.
#
# The draws: addNoise draws nothing but the method's normals, so set.seed(s) followed by
# the same rnorm calls as the method's code (R/addNoise.r) gives the numbers it used;
# each run below draws them first, then reseeds and calls addNoise, and checks that its
# step-by-step rebuild equals addNoise's output.

suppressPackageStartupMessages({
  library(sdcMicro)
  library(MASS)
})

args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 2) {
  stop("usage: Rscript noise.R <sdcmicro data folder> <output folder>")
}
data_dir <- args[1]
out_dir <- args[2]
dir.create(out_dir, showWarnings = FALSE, recursive = TRUE)

testdata <- read.csv(file.path(data_dir, "testdata.csv"))
num_vars <- c("expend", "income", "savings")

fmt <- function(v) ifelse(is.na(v), "NA", sprintf("%.17g", v))
write_table <- function(df, name, gz = FALSE) {
  df[] <- lapply(df, function(col) if (is.numeric(col)) fmt(col) else as.character(col))
  path <- file.path(out_dir, name)
  con <- if (gz) gzfile(path, "w") else file(path, "w")
  write.csv(df, con, row.names = FALSE, quote = FALSE)
  close(con)
}
scalars <- list()
add_scalar <- function(name, value) scalars[[name]] <<- value
max_rel <- function(a, b) max(abs(as.matrix(a) - as.matrix(b)) / pmax(abs(as.matrix(b)), 1e-300))

# ------------------------------------------------------------------ random per-variable methods
# the first 1000 records (the stored draws stay small); addNoise(x, variables, ...)$xm
x <- testdata[1:1000, num_vars]
n <- nrow(x)
m <- ncol(x)
outs <- data.frame(row = seq_len(n))
draws_out <- data.frame(row = seq_len(n))
runs <- list(
  additive150 = list(seed = 31, args = list(noise = 150, method = "additive")),
  correlated50 = list(seed = 32, args = list(noise = 50, method = "correlated")),
  correlated2_d0.1 = list(seed = 33, args = list(method = "correlated2")),
  correlated2_d0.5 = list(seed = 34, args = list(method = "correlated2", delta = 0.5))
)
for (name in names(runs)) {
  run <- runs[[name]]
  set.seed(run$seed)
  # additive, correlated2: apply(x, 2, ...) draws rnorm(n) column after column;
  # correlated: MASS::mvrnorm draws matrix(rnorm(m * n), n): the same n x m layout
  z <- matrix(rnorm(n * m), n)
  set.seed(run$seed)
  xm <- do.call(addNoise, c(list(x, variables = num_vars), run$args))$xm
  meth <- run$args$method
  if (meth == "additive") {
    rebuilt <- sapply(1:m, function(j) x[[j]] + (0 + run$args$noise / 100 * sd(x[[j]]) * z[, j]))
  } else if (meth == "correlated") {
    sig <- run$args$noise / 100 * cov(x)
    es <- eigen(sig, symmetric = TRUE)
    rebuilt <- as.matrix(x) + t(es$vectors %*% diag(sqrt(pmax(es$values, 0)), m) %*% t(z))
    # row k: eigenvalue k (decreasing, as eigen() gives them) and eigenvector k's components
    eig <- data.frame(value = es$values, t(es$vectors))
    names(eig) <- c("value", num_vars)
    write_table(eig, "correlated50_eigen.csv")
  } else {
    delta <- if (is.null(run$args$delta)) 0.1 else run$args$delta
    d1 <- sqrt(1 - delta^2)
    rebuilt <- sapply(1:m, function(j) {
      x[[j]] * d1 + delta * ((1 - d1) / delta * mean(x[[j]]) + sd(x[[j]]) * z[, j])
    })
  }
  add_scalar(paste0(name, "_seed"), run$seed)
  add_scalar(paste0(name, "_rebuilt_max_rel_diff"), max_rel(rebuilt, xm))
  stopifnot(max_rel(rebuilt, xm) < 1e-12)  # the draws are the ones addNoise used
  for (j in 1:m) {
    outs[[paste0(name, "_", num_vars[j])]] <- xm[, j]
    draws_out[[paste0(name, "_", num_vars[j])]] <- z[, j]
  }
}
write_table(outs, "noise_testdata1000.csv.gz", gz = TRUE)
write_table(draws_out, "draws_testdata1000.csv.gz", gz = TRUE)

# ------------------------------------------------------------------ restr (no random draws)
restr <- data.frame(row = seq_len(nrow(testdata)))
xm <- addNoise(testdata[, num_vars], variables = num_vars, noise = 150, method = "restr")$xm
for (j in 1:m) restr[[paste0("restr150_", num_vars[j])]] <- xm[, j]
write_table(restr, "restr_testdata.csv.gz", gz = TRUE)
small <- data.frame(row = 1:100)  # below 500 records: the small-sample factor
xm <- addNoise(testdata[1:100, num_vars], variables = num_vars, noise = 50, method = "restr")$xm
for (j in 1:m) small[[paste0("restr50_", num_vars[j])]] <- xm[, j]
write_table(small, "restr_testdata100.csv", gz = FALSE)

# ------------------------------------------------------------------ ROMM
# the first 80 records: ROMM draws matrix(rnorm(N * N), N) and orthonormalises I + p M
romm <- data.frame(row = 1:80)
romm_draws <- data.frame(index = 1:(80 * 80))
for (r in list(list(name = "ROMM_p0.001", seed = 35, p = 0.001),
               list(name = "ROMM_p0.1", seed = 36, p = 0.1))) {
  xr <- testdata[1:80, num_vars]
  set.seed(r$seed)
  romm_draws[[r$name]] <- rnorm(80 * 80)  # column-major: M[i, j] is element (j - 1) 80 + i
  set.seed(r$seed)
  xm <- addNoise(xr, variables = num_vars, method = "ROMM", p = r$p)$xm
  for (j in 1:m) romm[[paste0(r$name, "_", num_vars[j])]] <- xm[, j]
  add_scalar(paste0(r$name, "_seed"), r$seed)
}
write_table(romm, "romm_testdata80.csv")
write_table(romm_draws, "romm_draws.csv.gz", gz = TRUE)

# ------------------------------------------------------------------ stamp
write_table(data.frame(name = names(scalars), value = unlist(scalars)), "scalars.csv")
writeLines(c(
  paste0("R: ", R.version.string),
  paste0("sdcMicro: ", as.character(packageVersion("sdcMicro"))),
  paste0("MASS: ", as.character(packageVersion("MASS"))),
  paste0("RNG: ", paste(RNGkind(), collapse = ", ")),
  paste0("date: ", format(Sys.Date())),
  paste0("command: R_LIBS=<lib> Rscript tests/data/sdcmicro_r/noise.R ",
         "/path/to/shared/data/sdcmicro tests/data/sdcmicro_r/noise")
), file.path(out_dir, "stamp.txt"))
