# sdcMicro's microaggregation methods "simple", "single" and "pca", and the measures
# "mean", "median", "trim" and "onestep" (also with "onedims"), on the first 1502
# records of testdata's expend, income and savings, for
# tests/test_microaggregation_methods.py (which compares sdcbayes's
# ordered_microaggregation and sorted_microaggregation with these outputs and never
# needs R).
#
# Usage (R 4.2.2, sdcMicro 5.8.0; see microaggregation_methods/README.md):
#   R_LIBS=<lib> Rscript tests/data/sdcmicro_r/microaggregation_methods.R \
#       /path/to/shared/data/sdcmicro tests/data/sdcmicro_r/microaggregation_methods
#
# Argument 1: the folder of sdcMicro's data sets as CSV (testdata.csv): R and Python
# read the same bytes. Argument 2: the output folder (created). Numbers are written
# with sprintf("%.17g"), so they round-trip exactly to doubles.

suppressPackageStartupMessages(library(sdcMicro))

args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 2) {
  stop("usage: Rscript microaggregation_methods.R <sdcmicro data folder> <output folder>")
}
data_dir <- args[1]
out_dir <- args[2]
dir.create(out_dir, showWarnings = FALSE, recursive = TRUE)

testdata <- read.csv(file.path(data_dir, "testdata.csv"))
num_vars <- c("expend", "income", "savings")
# the first 1502 records keep the output small; 1502 is not a multiple of 3, 4 or 5,
# so every run has a last group of k + 2 records
n_used <- 1502
x <- testdata[seq_len(n_used), c(num_vars, "sex", "urbrur")]

fmt <- function(v) ifelse(is.na(v), "NA", sprintf("%.17g", v))
write_table <- function(df, name, gz = FALSE) {
  text <- which(!vapply(df, is.numeric, logical(1)))
  df[] <- lapply(df, function(col) if (is.numeric(col)) fmt(col) else as.character(col))
  path <- file.path(out_dir, name)
  con <- if (gz) gzfile(path, "w") else file(path, "w")
  write.csv(df, con, row.names = FALSE, quote = if (length(text)) text else FALSE)
  close(con)
}

# Each run: name, method, aggr, measure, trim, varsort, strata. The output holds
# microaggregation(...)$mx for the three variables, column "<name>_<variable>".
runs <- list(
  list("simple3", "simple", 3, "mean", 0, 1, NULL),
  list("simple5", "simple", 5, "mean", 0, 1, NULL),
  list("single3", "single", 3, "mean", 0, 1, NULL),
  list("single5", "single", 5, "mean", 0, 1, NULL),
  list("single3v3", "single", 3, "mean", 0, 3, NULL),    # sorted on savings
  list("single4v2", "single", 4, "mean", 0, 2, NULL),    # income has ties
  list("pca3", "pca", 3, "mean", 0, 1, NULL),
  list("pca5", "pca", 5, "mean", 0, 1, NULL),
  list("pca5median", "pca", 5, "median", 0, 1, NULL),
  list("pca4median", "pca", 4, "median", 0, 1, NULL),    # even groups: mean of two middles
  list("pca5trim", "pca", 5, "trim", 0.2, 1, NULL),      # floor(5 * 0.2) = 1 from each end
  list("pca3trim", "pca", 3, "trim", 0.1, 1, NULL),      # floor(3 * 0.1) = 0: the mean
  list("pca5onestep", "pca", 5, "onestep", 0, 1, NULL),
  list("single5median", "single", 5, "median", 0, 1, NULL),
  list("single5trim", "single", 5, "trim", 0.4, 1, NULL),
  list("single5onestep", "single", 5, "onestep", 0, 1, NULL),
  list("simple5median", "simple", 5, "median", 0, 1, NULL),
  list("simple5trim", "simple", 5, "trim", 0.2, 1, NULL),
  list("simple5onestep", "simple", 5, "onestep", 0, 1, NULL),
  list("onedims3trim", "onedims", 3, "trim", 0.34, 1, NULL),
  list("onedims3onestep", "onedims", 3, "onestep", 0, 1, NULL),
  list("onedims5median", "onedims", 5, "median", 0, 1, NULL),
  list("pca3sex", "pca", 3, "mean", 0, 1, "sex"),
  list("single5urbrur", "single", 5, "median", 0, 2, "urbrur"),
  list("simple3sexurbrur", "simple", 3, "onestep", 0, 1, c("sex", "urbrur"))
)
out <- data.frame(row = seq_len(nrow(x)))
spec <- data.frame()
for (r in runs) {
  m <- microaggregation(x, variables = num_vars, aggr = r[[3]], method = r[[2]],
                        measure = r[[4]], trim = r[[5]], varsort = r[[6]],
                        strata_variables = r[[7]])$mx
  for (v in num_vars) out[[paste0(r[[1]], "_", v)]] <- m[[v]]
  spec <- rbind(spec, data.frame(name = r[[1]], method = r[[2]], aggr = r[[3]],
                                 measure = r[[4]], trim = r[[5]], varsort = r[[6]],
                                 strata = paste(r[[7]], collapse = "+")))
}
out$row <- NULL
write_table(out, "microaggregation_methods_testdata.csv.gz", gz = TRUE)
write.csv(spec, file.path(out_dir, "runs.csv"), row.names = FALSE)

# The first principal axis R used (princomp(scale(x))$loadings[, 1], LAPACK's sign),
# for the whole file and for each stratum of the strata runs (stratum as sdcbayes
# labels it: the value, several joined by "-")
axes <- data.frame()
add_axis <- function(what, d) {
  l <- princomp(scale(d[, num_vars]))$loadings[, 1]
  axes <<- rbind(axes, data.frame(stratum = what, expend = fmt(l[1]), income = fmt(l[2]),
                                  savings = fmt(l[3])))
}
add_axis("all", x)
for (s in sort(unique(x$sex))) add_axis(paste0("sex=", s), x[x$sex == s, ])
write.csv(axes, file.path(out_dir, "pca_axes.csv"), row.names = FALSE, quote = FALSE)

# sdcMicro stops on a stratum of fewer than 2 * aggr records (indexMicro)
small <- x[1:13, ]
small$grp <- c(rep(1, 8), rep(2, 5))
err <- tryCatch({
  microaggregation(small, variables = num_vars, aggr = 3, method = "single",
                   strata_variables = "grp")
  "no error"
}, error = function(e) conditionMessage(e))
writeLines(sub("\n$", "", err), file.path(out_dir, "small_stratum_error.txt"))

writeLines(c(R.version.string, paste("sdcMicro", packageVersion("sdcMicro")),
             paste("written", format(Sys.Date()))), file.path(out_dir, "stamp.txt"))
