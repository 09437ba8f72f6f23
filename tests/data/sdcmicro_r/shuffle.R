# sdcMicro's shuffle (data shuffling, Muralidhar & Sarathy 2006) on sdcMicro's testdata,
# for tests/test_shuffle.py (which rebuilds R's output from R's normal draws and never
# needs R).
#
# Usage (R 4.2.2, sdcMicro 5.8.0; see shuffle/README.md):
#   R_LIBS=<lib> Rscript tests/data/sdcmicro_r/shuffle.R \
#       /path/to/shared/data/sdcmicro tests/data/sdcmicro_r/shuffle
#
# Argument 1: the folder of sdcMicro's data sets as CSV (testdata.csv): R and Python read
# the same bytes. Argument 2: the output folder (created). Numbers are written with
# sprintf("%.17g"), so they round-trip exactly to doubles.
#
# R's random numbers cannot be reproduced by NumPy, so each run is made twice with the
# same seed: once through shuffle() itself, once through sdcMicro's own internal
# shuffleWORK with MASS::mvrnorm wrapped to record every (mu, Sigma, draw); the script
# checks both give identical output and stores the draws, from which the Python test
# rebuilds R's shuffled values.

suppressPackageStartupMessages({
  library(sdcMicro)
  library(MASS)
})

args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 2) {
  stop("usage: Rscript shuffle.R <sdcmicro data folder> <output folder>")
}
data_dir <- args[1]
out_dir <- args[2]
dir.create(out_dir, showWarnings = FALSE, recursive = TRUE)

# the first 1500 records keep the stored draws small; walls as a factor (levels 1, 2, 3
# sorted numerically) exercises the treatment contrasts
n_rec <- 1500
testdata <- read.csv(file.path(data_dir, "testdata.csv"))[seq_len(n_rec), ]
testdata$walls <- factor(testdata$walls)

fmt <- function(v) ifelse(is.na(v), "NA", sprintf("%.17g", v))
write_table <- function(df, name, gz = FALSE) {
  df[] <- lapply(df, function(col) if (is.numeric(col)) fmt(col) else as.character(col))
  path <- file.path(out_dir, name)
  con <- if (gz) gzfile(path, "w") else file(path, "w")
  write.csv(df, con, row.names = FALSE, quote = FALSE)
  close(con)
}

# sdcMicro's shuffleWORK with mvrnorm resolved to a recorder (same draws, same code)
draws <- list()
recorder <- function(n = 1, mu, Sigma, ...) {
  x <- MASS::mvrnorm(n = n, mu = mu, Sigma = Sigma, ...)
  draws[[length(draws) + 1]] <<- list(mu = mu, Sigma = Sigma, x = x)
  x
}
work <- sdcMicro:::shuffleWORK
env <- new.env(parent = environment(work))
assign("mvrnorm", recorder, envir = env)
environment(work) <- env

configs <- list(
  list(name = "ds_spearman", form = expend + income + savings ~ urbrur + walls + age + sex,
       method = "ds", covmethod = "spearman", weights = NULL, seed = 51, n_draws = 1),
  list(name = "ds_pearson", form = expend + income + savings ~ urbrur + walls + age + sex,
       method = "ds", covmethod = "pearson", weights = NULL, seed = 52, n_draws = 1),
  list(name = "ds_onepredictor", form = income + savings ~ age,
       method = "ds", covmethod = "spearman", weights = NULL, seed = 53, n_draws = 1),
  list(name = "mvn_spearman", form = expend + income + savings ~ urbrur + walls + age,
       method = "mvn", covmethod = "spearman", weights = NULL, seed = 54, n_draws = 2),
  list(name = "mvn_pearson_weighted", form = expend + income + savings ~ urbrur + walls + age,
       method = "mvn", covmethod = "pearson", weights = testdata$household_weights,
       seed = 55, n_draws = 2)
)

sigma_rows <- list()
model_cols <- data.frame(config = character(), columns = character())
for (cf in configs) {
  # the predictors' model-matrix columns (shuffleWORK drops the intercept)
  mm <- colnames(stats::model.matrix(cf$form, data = testdata))[-1]
  model_cols[nrow(model_cols) + 1, ] <- c(cf$name, paste(mm, collapse = " "))
  set.seed(cf$seed)
  ref <- shuffle(testdata, form = cf$form, method = cf$method, weights = cf$weights,
                 covmethod = cf$covmethod)
  draws <- list()
  set.seed(cf$seed)
  res <- work(testdata, form = cf$form, method = cf$method, weights = cf$weights,
              covmethod = cf$covmethod)
  stopifnot(identical(res$shuffled, ref$shuffled), identical(res$perturbed, ref$perturbed))
  vars <- colnames(ref$shuffled)
  out <- data.frame(row = seq_len(n_rec))
  for (v in vars) out[[paste0("shuffled_", v)]] <- ref$shuffled[, v]
  for (v in vars) out[[paste0("perturbed_", v)]] <- ref$perturbed[, v]
  # only the draws that enter the shuffled values (gadp = TRUE draws once more after)
  for (d in seq_len(cf$n_draws)) {
    x <- draws[[d]]$x
    for (j in seq_len(ncol(x))) out[[paste0("draw", d, "_", j)]] <- x[, j]
    S <- draws[[d]]$Sigma
    for (i in seq_len(nrow(S))) {
      sigma_rows[[length(sigma_rows) + 1]] <- data.frame(
        config = cf$name, draw = d, row = i, mu = unname(draws[[d]]$mu[i]),
        t(setNames(unname(S[i, ]), paste0("sigma_", seq_len(ncol(S))))))
    }
  }
  write_table(out, paste0(cf$name, ".csv.gz"), gz = TRUE)
}
# rows of different widths: pad with NA
all_cols <- unique(unlist(lapply(sigma_rows, names)))
sigma <- do.call(rbind, lapply(sigma_rows, function(r) {
  r[setdiff(all_cols, names(r))] <- NA
  r[all_cols]
}))
write_table(sigma, "draw_parameters.csv")
write_table(model_cols, "model_columns.csv")

# method "mlm" fails in sdcMicro 5.8.0 (predict() on a matrix): record the message
msg <- tryCatch({
  shuffle(testdata, form = expend + income + savings ~ urbrur + age, method = "mlm")
  "no error"
}, error = function(e) conditionMessage(e))
writeLines(msg, file.path(out_dir, "mlm_error.txt"))

writeLines(c(
  paste0("R: ", R.version.string),
  paste0("sdcMicro: ", as.character(packageVersion("sdcMicro"))),
  paste0("MASS: ", as.character(packageVersion("MASS"))),
  paste0("RNG: ", paste(RNGkind(), collapse = ", ")),
  paste0("date: ", format(Sys.Date())),
  paste0("command: R_LIBS=<lib> Rscript tests/data/sdcmicro_r/shuffle.R ",
         "/path/to/shared/data/sdcmicro tests/data/sdcmicro_r/shuffle")
), file.path(out_dir, "stamp.txt"))
