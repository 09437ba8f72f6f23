# dUtility and dRisk of sdcMicro on the protected pairs that `sdcbayes protect` writes in
# tests/test_sdcmicro_r_cli.py and that protection.R does not score: top/bottom coding
# (its topBotCoding settings), MDAV at k = 5 and method "onedims" at k = 3. The CLI test
# (which never needs R) compares summary.json's interval risk, IL1 and eigenvalue
# difference with these.
#
# Usage (R 4.2.2, sdcMicro 5.8.0; see cli/README.md):
#   R_LIBS=<lib> Rscript tests/data/sdcmicro_r/cli.R \
#       /path/to/shared/data/sdcmicro tests/data/sdcmicro_r/cli
#
# Argument 1: the folder of sdcMicro's data sets as CSV (testdata.csv): R and Python read
# the same bytes. Argument 2: the output folder (created). Numbers are written with
# sprintf("%.17g"), so they round-trip exactly to doubles.

suppressPackageStartupMessages(library(sdcMicro))

args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 2) stop("usage: Rscript cli.R <sdcmicro data folder> <output folder>")
out_dir <- args[2]
dir.create(out_dir, showWarnings = FALSE, recursive = TRUE)

testdata <- read.csv(file.path(args[1], "testdata.csv"))
num_vars <- c("expend", "income", "savings")
x <- testdata[, num_vars]

# the three codings of protection.R, applied to one file (each touches its own column)
topbot <- topBotCoding(testdata, value = 9e7, replacement = 9.5e7, kind = "top",
                       column = "income")
topbot <- topBotCoding(topbot, value = 1e6, replacement = 5e5, kind = "bottom",
                       column = "expend")
topbot <- topBotCoding(topbot, value = 5e6, replacement = 5e6, kind = "top",
                       column = "savings")
as_frame <- function(m) {
  m <- as.data.frame(m)
  names(m) <- num_vars
  m
}
pairs <- list(
  topbot = topbot[, num_vars],
  mdav5 = as_frame(microaggregation(x, method = "mdav", aggr = 5)$mx),
  onedims3 = as_frame(microaggregation(x, method = "onedims", aggr = 3)$mx)
)

rows <- list()
for (p in names(pairs)) {
  xm <- pairs[[p]]
  for (meth in c("IL1old", "IL1s", "eigen")) {
    rows[[length(rows) + 1]] <- data.frame(
      name = paste0("dUtility_", meth, "_", p), value = dUtility(x, xm = xm, method = meth))
  }
  for (k in list(list("default", 0.05), list("k0.1", 0.1), list("k0.01", 0.01))) {
    rows[[length(rows) + 1]] <- data.frame(
      name = paste0("dRisk_", k[[1]], "_", p), value = dRisk(x, xm = xm, k = k[[2]]))
  }
}
out <- do.call(rbind, rows)
out$value <- sprintf("%.17g", out$value)
write.csv(out, file.path(out_dir, "scalars.csv"), row.names = FALSE)

writeLines(c(
  paste0("R: ", R.version.string),
  paste0("sdcMicro: ", as.character(packageVersion("sdcMicro"))),
  paste0("date: ", format(Sys.Date())),
  paste0("command: R_LIBS=<lib> Rscript tests/data/sdcmicro_r/cli.R ",
         "/path/to/shared/data/sdcmicro tests/data/sdcmicro_r/cli")
), file.path(out_dir, "stamp.txt"))
