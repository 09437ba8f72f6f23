# sdcMicro's risk measures on sdcMicro's own data files, for tests/test_sdcmicro_r_risk.py.
#
# Usage: R_LIBS=<lib> Rscript tests/data/sdcmicro_r/risk.R <sdcmicro data folder> <output folder>
# e.g.   R_LIBS=/tmp/Rlib Rscript tests/data/sdcmicro_r/risk.R /path/to/shared/data/sdcmicro \
#            tests/data/sdcmicro_r/risk
# Reads testdata.csv, eusilc.csv and free1.csv (the CSV copies of sdcMicro's data sets) and
# writes the files listed in the output folder's README.md. Numbers are written with
# sprintf("%.17g") so that they round-trip exactly.
suppressPackageStartupMessages(library(sdcMicro))
suppressPackageStartupMessages(library(data.table))

args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 2) stop("usage: Rscript risk.R <sdcmicro data folder> <output folder>")
src <- args[1]
out <- args[2]
dir.create(out, showWarnings = FALSE, recursive = TRUE)

# NA stays NA (written unquoted, as R writes missing values), not the quoted text "NA"
num <- function(x) ifelse(is.na(x), NA_character_, sprintf("%.17g", as.numeric(x)))
write_num <- function(df, name) {
  df <- as.data.frame(df)
  for (v in names(df)) if (is.numeric(df[[v]])) df[[v]] <- num(df[[v]])
  path <- file.path(out, name)
  if (grepl("\\.gz$", name)) {
    con <- gzfile(path, "w")
    write.csv(df, con, row.names = FALSE, quote = TRUE)
    close(con)
  } else {
    write.csv(df, path, row.names = FALSE, quote = TRUE)
  }
}
# character keys become factors (as measure_risk does; freqCalc and suda2 call as.numeric)
as_factors <- function(d) {
  for (v in names(d)) if (is.character(d[[v]])) d[[v]] <- factor(d[[v]])
  d
}

testdata <- read.csv(file.path(src, "testdata.csv"))
eusilc <- as_factors(read.csv(file.path(src, "eusilc.csv")))
free1 <- read.csv(file.path(src, "free1.csv"))

K5 <- c("urbrur", "roof", "walls", "water", "sex")
K7 <- c("urbrur", "roof", "walls", "water", "electcon", "relat", "sex")
KE <- c("db040", "hsize", "rb090", "age", "pb220a")

# testdata with missing key values, set deterministically (record i, 1-based):
# roof NA if i %% 17 == 0, walls NA if i %% 23 == 0, sex NA if i %% 29 == 0,
# every key NA if i %% 401 == 0
na_data <- testdata[, c(K7, "sampling_weight", "household_weights", "ori_hid")]
i <- seq_len(nrow(na_data))
na_data$roof[i %% 17 == 0] <- NA
na_data$walls[i %% 23 == 0] <- NA
na_data$sex[i %% 29 == 0] <- NA
na_data[i %% 401 == 0, K7] <- NA
write_num(na_data, "testdata_na.csv.gz")

# ---------------------------------------------------------------------------------------
# 1-2, 5. freqCalc, indivRisk (approx, exact), measure_risk (ER, global threshold,
# household risk), kAnon violations
# ---------------------------------------------------------------------------------------
cases <- list(
  testdata_k7_sw = list(data = testdata, keys = K7, w = "sampling_weight", hid = "ori_hid"),
  testdata_k7_hw = list(data = testdata, keys = K7, w = "household_weights", hid = "ori_hid"),
  testdata_k5_hw = list(data = testdata, keys = K5, w = "household_weights", hid = "ori_hid"),
  eusilc_k5 = list(data = eusilc, keys = KE, w = "rb050", hid = "db030"),
  testdata_na_k7_hw = list(data = na_data, keys = K7, w = "household_weights", hid = "ori_hid")
)
rates <- c(0.01, 0.005, 0.002, 0.001)
summ <- list()
for (nm in names(cases)) {
  cs <- cases[[nm]]
  f <- freqCalc(cs$data, keyVars = cs$keys, w = cs$w)
  ra <- indivRisk(f, method = "approx", survey = TRUE)$rk
  re <- indivRisk(f, method = "exact", survey = TRUE)$rk
  mr <- measure_risk(cs$data, keyVars = cs$keys, w = cs$w, hid = cs$hid)
  stopifnot(isTRUE(all.equal(mr$Res[, "risk"], ra, tolerance = 0)))
  write_num(data.frame(fk = f$fk, Fk = f$Fk, rk_approx = ra, rk_exact = re,
                       hier_risk = mr$Res[, "hier_risk"]),
            paste0("records_", nm, ".csv.gz"))
  for (rate in rates) {
    m <- measure_risk(cs$data, keyVars = cs$keys, w = cs$w, hid = cs$hid,
                      max_global_risk = rate)
    summ[[length(summ) + 1]] <- data.frame(
      case = nm, max_global_risk = rate, global_risk = m$global_risk,
      global_risk_ER = m$global_risk_ER, hier_risk_ER = m$hier_risk_ER,
      hier_risk = m$hier_risk, global_threshold = m$global_threshold,
      n1 = f$n1, n2 = f$n2)
  }
}
write_num(do.call(rbind, summ), "measure_risk_summary.csv")

# kAnon_violations of an sdcMicroObj (R/methods.r), unweighted and weighted
kan <- list()
for (nm in c("testdata_k7_sw", "eusilc_k5", "testdata_na_k7_hw")) {
  cs <- cases[[nm]]
  sdc <- createSdcObj(cs$data, keyVars = cs$keys, weightVar = cs$w)
  for (k in c(2, 3, 5)) {
    kan[[length(kan) + 1]] <- data.frame(
      case = nm, k = k, violations = kAnon_violations(sdc, weighted = FALSE, k = k),
      weighted_violations = kAnon_violations(sdc, weighted = TRUE, k = k))
  }
}
write_num(do.call(rbind, kan), "kanon_violations.csv")

# ---------------------------------------------------------------------------------------
# 3. ldiversity (per record; the Multi* columns are left out: see the README)
# ---------------------------------------------------------------------------------------
ld <- ldiversity(testdata, keyVars = K5, ldiv_index = c("electcon", "relat", "income"))
ld <- as.data.frame(unclass(ld))
write_num(ld[, !grepl("^Multi", names(ld))], "ldiversity_testdata_k5.csv.gz")

# ---------------------------------------------------------------------------------------
# 4. suda2 (defaults: missing = -999, DisFraction = 0.01, original_scores = TRUE)
# ---------------------------------------------------------------------------------------
KS_T <- c("urbrur", "roof", "walls", "water", "sex", "relat")
KS_F <- c("REGION", "SEX", "AGE", "MARSTAT", "KINDPERS", "EDUC1", "ETNI")
for (s in list(list(name = "testdata", data = testdata, keys = KS_T),
               list(name = "free1", data = free1, keys = KS_F),
               list(name = "testdata_na", data = na_data, keys = K7))) {
  su <- suda2(s$data, variables = s$keys)
  rec <- data.frame(su$contributionPercent, score = su$score, disScore = su$disScore)
  write_num(rec, paste0("suda2_", s$name, ".csv.gz"))
  write_num(su$attribute_contributions, paste0("suda2_", s$name, "_attributes.csv"))
}

# ---------------------------------------------------------------------------------------
# 5. riskyCells (unsafe cells up to dimension 3)
# ---------------------------------------------------------------------------------------
rc <- riskyCells(testdata, keyVars = K7, threshold = c(50, 25, 10), maxDim = 3)
write.csv(as.data.frame(rc), file.path(out, "riskycells_testdata_k7.csv"), row.names = FALSE)
rc <- riskyCells(eusilc, keyVars = KE, threshold = 3, maxDim = 3)
write.csv(as.data.frame(rc), file.path(out, "riskycells_eusilc_k5.csv"), row.names = FALSE)

# ---------------------------------------------------------------------------------------
# 6. modRisk, every method; the fitted cell means of "default" and "IPF" with their cells
# ---------------------------------------------------------------------------------------
# the keys as factors, so that glm's "default" is the model of categorical main effects
# (or two-way interactions); testdata's integer codes as they are, which glm reads as
# numeric covariates (one slope per key); eusilc without pb220a (2720 NA), with age in
# five-year groups (ageg = min(age %/% 5, 17))
fac <- function(d, v) { for (x in v) d[[x]] <- factor(d[[x]]); d }
KM <- c("urbrur", "roof", "walls", "water", "sex")
KEM <- c("db040", "hsize", "rb090", "ageg")
eusilc$ageg <- pmin(eusilc$age %/% 5, 17)
mods <- list(
  testdata_codes = list(data = testdata, form = ~ urbrur + roof + walls + water + sex,
                        w = "sampling_weight"),
  testdata_main = list(data = fac(testdata, KM), form = ~ urbrur + roof + walls + water + sex,
                       w = "sampling_weight"),
  testdata_main_hw = list(data = fac(testdata, KM),
                          form = ~ urbrur + roof + walls + water + sex,
                          w = "household_weights"),
  eusilc_main = list(data = fac(eusilc, KEM), form = ~ db040 + hsize + rb090 + ageg,
                     w = "rb050"),
  eusilc_2way = list(data = fac(eusilc, KEM), form = ~ (db040 + hsize + rb090 + ageg)^2,
                     w = "rb050")
)
mres <- list()
for (nm in names(mods)) {
  m <- mods[[nm]]
  vars <- labels(terms(m$form))[attributes(terms(m$form))$order == 1]
  methods <- if (grepl("2way", nm)) c("default", "CE", "PML", "weightedLLM") else
    c("default", "CE", "PML", "weightedLLM", "IPF")
  for (meth in methods) {
    r <- suppressWarnings(modRisk(m$data, method = meth, weights = m$w, formulaM = m$form))
    mres[[length(mres) + 1]] <- data.frame(case = nm, method = meth, gr1 = r$gr1, gr2 = r$gr2)
    if (meth == "default") {
      # the grid of modRisk (R/modRisk.R), rebuilt to attach the cells to glm's fitted
      # values, which are named by the grid's row numbers
      x <- m$data[, vars]
      grid <- data.table(expand.grid(lapply(vars, function(v) unique(x[[v]]))))
      setnames(grid, vars)
      setkeyv(grid, vars)
      fit <- r$fitted
      grid$fitted <- as.numeric(fit[as.character(seq_len(nrow(grid)))])
      write_num(grid, paste0("modrisk_", nm, "_default_fitted.csv.gz"))
    }
    if (meth == "IPF") {
      fit <- as.data.frame.table(r$fitted, stringsAsFactors = FALSE)
      names(fit)[ncol(fit)] <- "fitted"
      write_num(fit, paste0("modrisk_", nm, "_ipf_fitted.csv.gz"))
    }
  }
}
write_num(do.call(rbind, mres), "modrisk_summary.csv")

# ---------------------------------------------------------------------------------------
# stamp
# ---------------------------------------------------------------------------------------
writeLines(c(R.version.string, paste("sdcMicro", as.character(packageVersion("sdcMicro"))),
             paste("data.table", as.character(packageVersion("data.table"))),
             paste("date", format(Sys.Date()))),
           file.path(out, "stamp.txt"))
