# sdcMicro's protection and utility methods on sdcMicro's own data files, for
# tests/test_sdcmicro_r_protection.py (which compares sdcbayes with these outputs
# and never needs R).
#
# Usage (R 4.2.2, sdcMicro 5.8.0; see protection/README.md):
#   R_LIBS=<lib> Rscript tests/data/sdcmicro_r/protection.R \
#       /path/to/shared/data/sdcmicro tests/data/sdcmicro_r/protection
#
# Argument 1: the folder of sdcMicro's data sets as CSV (testdata.csv, testdata2.csv,
# free1.csv):
# R and Python read the same bytes. Argument 2: the output folder (created).
# Numbers are written with sprintf("%.17g"), so they round-trip exactly to doubles.

suppressPackageStartupMessages({
  library(sdcMicro)
  library(MASS)
})

args <- commandArgs(trailingOnly = TRUE)
if (length(args) != 2) {
  stop("usage: Rscript protection.R <sdcmicro data folder> <output folder>")
}
data_dir <- args[1]
out_dir <- args[2]
dir.create(out_dir, showWarnings = FALSE, recursive = TRUE)

testdata <- read.csv(file.path(data_dir, "testdata.csv"))
free1 <- read.csv(file.path(data_dir, "free1.csv"))
num_vars <- c("expend", "income", "savings")
free_vars <- c("INCOME", "MONEY", "ASSETS", "DEBTS")  # free1[, 31:34]

fmt <- function(v) ifelse(is.na(v), "NA", sprintf("%.17g", v))

# write a data.frame of numbers (or strings) as CSV, gzipped when asked
# (text columns quoted: interval labels such as "(9,19]" contain commas)
write_table <- function(df, name, gz = FALSE) {
  text <- which(!vapply(df, is.numeric, logical(1)))
  df[] <- lapply(df, function(col) if (is.numeric(col)) fmt(col) else as.character(col))
  path <- file.path(out_dir, name)
  con <- if (gz) gzfile(path, "w") else file(path, "w")
  write.csv(df, con, row.names = FALSE, quote = if (length(text)) text else FALSE)
  close(con)
}

scalars <- list()  # name -> value, written to scalars.csv at the end
add_scalar <- function(name, value) scalars[[name]] <<- value

# ------------------------------------------------------------------ 1. microaggregation
ma <- data.frame(row = seq_len(nrow(testdata)))
for (aggr in c(3, 5)) {
  m <- microaggregation(testdata[, num_vars], variables = num_vars, method = "mdav",
                        aggr = aggr)$mx
  for (v in num_vars) ma[[paste0("mdav", aggr, "_", v)]] <- m[[v]]
}
# mdav within strata (sex): microaggregationWORK splits by strata_variables
m <- microaggregation(testdata[, c(num_vars, "sex")], variables = num_vars, method = "mdav",
                      aggr = 3, strata_variables = "sex")$mx
for (v in num_vars) ma[[paste0("mdav3sex_", v)]] <- m[[v]]
# one variable: microaggregation calls mafast whatever the method
for (v in c("expend", "income")) {
  ma[[paste0("mafast3_", v)]] <- microaggregation(testdata[, num_vars], variables = v,
                                                  method = "mdav", aggr = 3)$mx[[v]]
}
ma[["mafast3sex_income"]] <- microaggregation(testdata[, c(num_vars, "sex")],
                                              variables = "income", aggr = 3,
                                              strata_variables = "sex")$mx[["income"]]
ma[["mafast5_savings"]] <- microaggregation(testdata[, num_vars], variables = "savings",
                                            aggr = 5)$mx[["savings"]]
# individual ranking ("onedims"): each variable sorted and blocked on its own
for (aggr in c(3, 5)) {
  m <- microaggregation(testdata[, num_vars], variables = num_vars, method = "onedims",
                        aggr = aggr)$mx
  for (v in num_vars) ma[[paste0("onedims", aggr, "_", v)]] <- m[[v]]
}
ma$row <- NULL
write_table(ma, "microaggregation_testdata.csv.gz", gz = TRUE)

mf <- data.frame(row = seq_len(nrow(free1)))
for (aggr in c(3, 5)) {
  m <- microaggregation(free1[, free_vars], variables = free_vars, method = "mdav",
                        aggr = aggr)$mx
  for (v in free_vars) mf[[paste0("mdav", aggr, "_", v)]] <- m[[v]]
}
mf$row <- NULL
write_table(mf, "microaggregation_free1.csv.gz", gz = TRUE)

# ------------------------------------------------------------------ 2. localSuppression
keys <- c("urbrur", "roof", "walls", "water", "electcon", "relat", "sex")
ls_rows <- list()
ls_summary <- list()
importances <- list(default = NULL, reversed = 7:1, given = c(1, 4, 2, 6, 3, 7, 5))
for (k in c(2, 3)) {
  for (imp_name in names(importances)) {
    imp <- importances[[imp_name]]
    res <- localSuppression(testdata[, keys], keyVars = keys, k = k, importance = imp)
    anon <- as.data.frame(res$xAnon)
    config <- paste0("k", k, "_", imp_name)
    for (v in keys) {
      rows <- which(is.na(anon[[v]]) & !is.na(testdata[[v]]))
      if (length(rows)) {
        ls_rows[[length(ls_rows) + 1]] <- data.frame(config = config, record = rows,
                                                    variable = v)
      }
      ls_summary[[length(ls_summary) + 1]] <- data.frame(
        config = config, variable = v, suppressed = length(rows),
        importance = if (is.null(imp)) NA else imp[match(v, keys)])
    }
    fk <- freqCalc(anon, keyVars = keys)
    add_scalar(paste0("ls_", config, "_min_fk"), min(fk$fk))
  }
}
write_table(do.call(rbind, ls_rows), "localsuppression_cells.csv.gz", gz = TRUE)
write_table(do.call(rbind, ls_summary), "localsuppression_counts.csv")

# ------------------------------------------------------------------ 3. recoding
rec <- data.frame(
  income_top = topBotCoding(testdata, value = 9e7, replacement = 9.5e7, kind = "top",
                            column = "income")$income,
  expend_bottom = topBotCoding(testdata, value = 1e6, replacement = 5e5, kind = "bottom",
                               column = "expend")$expend,
  savings_top = topBotCoding(testdata, value = 5e6, replacement = 5e6, kind = "top",
                             column = "savings")$savings
)
# globalRecode with a breaks vector: cut(x, breaks, dig.lab = 8), right-closed,
# include.lowest = FALSE
age_rc <- globalRecode(testdata, column = "age", breaks = c(-1, 9, 19, 39, 59, 95))$age
rec$age_code <- as.integer(age_rc)
rec$age_label <- as.character(age_rc)
# breaks starting at the minimum (0): the age-0 records fall outside (NA in R)
age_rc0 <- globalRecode(testdata, column = "age", breaks = c(0, 15, 30, 65, 95))$age
rec$age0_code <- as.integer(age_rc0)
rec$age0_label <- as.character(age_rc0)
# groupAndRename on factors
wf <- factor(testdata$water)
rec$water_grouped <- as.character(groupAndRename(data.frame(water = wf), var = "water",
                                                 before = c("1", "2"), after = "1_2")$water)
rf <- factor(testdata$roof)
rec$roof_grouped <- as.character(groupAndRename(data.frame(roof = rf), var = "roof",
                                                before = c("5", "6", "9"),
                                                after = "other")$roof)
write_table(rec, "recode_testdata.csv.gz", gz = TRUE)

# ------------------------------------------------------------------ 4. PRAM matrices
# calcTransitionMatrix draws runif(L, pd, 1) first (no strata, one variable), then
# samples; the diagonal is re-drawn here from the same seed to store it.
pram_rows <- list()
pram_cases <- list(list(var = "water", pd = 0.8, alpha = 0.5, seed = 11),
                   list(var = "roof", pd = 0.6, alpha = 0.3, seed = 12),
                   list(var = "relat", pd = 0.8, alpha = 0.5, seed = 13),
                   list(var = "walls", pd = 0.5, alpha = 1.0, seed = 14))
for (case in pram_cases) {
  f <- factor(testdata[[case$var]])
  L <- nlevels(f)
  set.seed(case$seed)
  pds <- runif(L, min = case$pd, max = 1)
  set.seed(case$seed)
  res <- pram(f, pd = case$pd, alpha = case$alpha)
  Rs <- attr(res, "pram_params")$x$Rs
  for (i in seq_len(L)) {
    pram_rows[[length(pram_rows) + 1]] <- data.frame(
      variable = case$var, pd = case$pd, alpha = case$alpha, seed = case$seed,
      level = levels(f)[i], count = sum(f == levels(f)[i]), diagonal_drawn = pds[i],
      matrix(Rs[i, ], nrow = 1, dimnames = list(NULL, paste0("to_", seq_len(L)))))
  }
}
all_cols <- unique(unlist(lapply(pram_rows, names)))
pram_rows <- lapply(pram_rows, function(d) {
  for (cn in setdiff(all_cols, names(d))) d[[cn]] <- NA
  d[, all_cols]
})
write_table(do.call(rbind, pram_rows), "pram_matrices.csv")

# ------------------------------------------------------------------ 5./7. noise, utility, risk
x <- testdata[, num_vars]
set.seed(21)
noise_add <- addNoise(x, variables = num_vars, noise = 150, method = "additive")$xm
set.seed(22)
noise_cor <- addNoise(x, variables = num_vars, noise = 50, method = "correlated")$xm
noise <- data.frame(noise_add, noise_cor)
names(noise) <- c(paste0("additive150_", num_vars), paste0("correlated50_", num_vars))
write_table(noise, "addnoise_testdata.csv.gz", gz = TRUE)
add_scalar("addnoise_additive150_seed", 21)
add_scalar("addnoise_correlated50_seed", 22)

ma3 <- as.data.frame(ma[, paste0("mdav3_", num_vars)])
names(ma3) <- num_vars
pairs <- list(additive150 = as.data.frame(noise_add), correlated50 = as.data.frame(noise_cor),
              mdav3 = ma3)
for (p in names(pairs)) {
  xm <- pairs[[p]]
  names(xm) <- num_vars
  for (meth in c("IL1", "IL1old", "IL1s", "eigen")) {
    add_scalar(paste0("dUtility_", meth, "_", p), dUtility(x, xm = xm, method = meth))
  }
  add_scalar(paste0("dRisk_default_", p), dRisk(x, xm = xm))
  add_scalar(paste0("dRisk_k0.1_", p), dRisk(x, xm = xm, k = 0.1))
  add_scalar(paste0("dRisk_k0.01_", p), dRisk(x, xm = xm, k = 0.01))
}

# ------------------------------------------------------------------ 6. rankSwap
rs_cases <- list(P005_s1 = list(P = 0.05, seed = 1), P005_s2 = list(P = 0.05, seed = 2),
                 P002_s3 = list(P = 0.02, seed = 3), P5_s4 = list(P = 5, seed = 4),
                 R0_s5 = list(P = NULL, seed = 5))
rs <- data.frame(row = seq_len(nrow(testdata)))
for (nm in names(rs_cases)) {
  case <- rs_cases[[nm]]
  out <- suppressMessages(rankSwap(testdata[, num_vars], variables = num_vars,
                                   P = case$P, seed = case$seed))
  for (v in num_vars) rs[[paste0(nm, "_", v)]] <- out[[v]]
}
rs$row <- NULL
write_table(rs, "rankswap_testdata.csv.gz", gz = TRUE)

# ------------------------------------------------------------------ 8. wave 2
# Written after every earlier output (each draw below is seeded on its own), so the
# files above do not change; scalars of this part go to scalars_wave2.csv.
scalars2 <- list()
add_scalar2 <- function(name, value) scalars2[[name]] <<- value
testdata2 <- read.csv(file.path(data_dir, "testdata2.csv"))

# 8a. localSuppression with strata, combs, missing values; one row per blanked cell
# (record 1-based, variable). Configs: see protection/README.md.
ls2_rows <- list()
ls2_add <- function(config, orig, anon, vars) {
  for (v in vars) {
    rows <- which(is.na(anon[[v]]) & !is.na(orig[[v]]))
    if (length(rows)) {
      ls2_rows[[length(ls2_rows) + 1]] <<- data.frame(config = config, record = rows,
                                                     variable = v)
    }
  }
}
ls2_fk <- function(config, anon, vars, strata = NULL) {
  df <- as.data.frame(anon)[, vars, drop = FALSE]
  if (!is.null(strata)) {
    fk <- ave(seq_len(nrow(df)), strata, FUN = function(i) freqCalc(df[i, , drop = FALSE],
                                                                   keyVars = vars)$fk)
  } else {
    fk <- freqCalc(df, keyVars = vars)$fk
  }
  add_scalar2(paste0("ls_", config, "_min_fk"), min(fk))
}
ageG <- cut(testdata2$age, 5)  # sdcMicro's own tests stratify testdata2 by this
strata_out <- data.frame(ageG_code = as.integer(ageG), ageG_label = as.character(ageG))
write_table(strata_out, "testdata2_ageG.csv")
d2 <- data.frame(testdata2[, keys], ageG = ageG)
for (imp_name in c("default", "given")) {
  imp <- importances[[imp_name]]
  res <- localSuppression(d2, keyVars = keys, strataVars = "ageG", k = 2, importance = imp)
  cfg <- paste0("t2_ageG_k2_", imp_name)
  ls2_add(cfg, d2, res$xAnon, keys)
  ls2_fk(cfg, res$xAnon, keys, strata = ageG)
}
# testdata, six keys within sex
keys6 <- setdiff(keys, "sex")
d1 <- testdata[, c(keys6, "sex")]
for (imp_name in c("default", "reversed")) {
  imp <- if (imp_name == "default") NULL else 6:1
  res <- localSuppression(d1, keyVars = keys6, strataVars = "sex", k = 3, importance = imp)
  cfg <- paste0("t1_sex_k3_", imp_name)
  ls2_add(cfg, d1, res$xAnon, keys6)
  ls2_fk(cfg, res$xAnon, keys6, strata = d1$sex)
}
# combs: the keys are the data's first columns (importance[kV] is then each key's own)
for (imp_name in c("default", "given")) {
  imp <- importances[[imp_name]]
  res <- localSuppression(testdata2[, keys], keyVars = keys, k = c(3, 2), combs = c(3, 2),
                          importance = imp)
  cfg <- paste0("t2_combs32_k32_", imp_name)
  ls2_add(cfg, testdata2, res$xAnon, keys)
  res <- localSuppression(testdata[, keys], keyVars = keys, k = 2, combs = 4,
                          importance = imp)
  cfg <- paste0("t1_combs4_k2_", imp_name)
  ls2_add(cfg, testdata, res$xAnon, keys)
}
# combs with the key columns in reverse order: importance[kV] then gives key i the
# rank given for key 8 - i, i.e. rev(importance) (suppression.py's difference (1))
res <- localSuppression(testdata2[, rev(keys)], keyVars = keys, k = c(3, 2), combs = c(3, 2),
                        importance = importances$given)
ls2_add("t2_combs32_k32_given_revcols", testdata2, res$xAnon, keys)
# combs and strata together
res <- localSuppression(d2, keyVars = keys, strataVars = "ageG", k = 2, combs = c(5, 3))
ls2_add("t2_ageG_combs53_k2_default", d2, res$xAnon, keys)
# missing values: water and relat blanked in every 23rd / 31st record (1-based)
t_na <- testdata[, keys]
t_na$water[seq(23, nrow(t_na), by = 23)] <- NA
t_na$relat[seq(31, nrow(t_na), by = 31)] <- NA
for (k in c(2, 3)) {
  res <- localSuppression(t_na, keyVars = keys, k = k)
  cfg <- paste0("t1_na_k", k, "_default")
  ls2_add(cfg, t_na, res$xAnon, keys)
  ls2_fk(cfg, res$xAnon, keys)
}

# 8b. ghostVars on testdata2: water -> water2, water3; relat -> relat2
ghost <- list(list("water", c("water2", "water3")), list("relat", "relat2"))
ghost_cols <- c("water2", "water3", "relat2")
sdc_g <- createSdcObj(testdata2, keyVars = keys, weightVar = "sampling_weight",
                      ghostVars = ghost)
sdc_ls <- localSuppression(sdc_g, k = 2)
ls2_add("t2_ghost_k2_default", testdata2, get.sdcMicroObj(sdc_ls, "manipKeyVars"), keys)
ls2_add("t2_ghost_k2_default", testdata2, get.sdcMicroObj(sdc_ls, "manipGhostVars"),
        ghost_cols)
write_table(do.call(rbind, ls2_rows), "localsuppression_wave2_cells.csv.gz", gz = TRUE)

# 8c. localSupp (risk threshold, one key) on testdata with household_weights (varying;
# sampling_weight is the constant 100, where no risk exceeds 0.05); the ghost column
# water_g = water %/% 3 follows water
td_g <- data.frame(testdata, water_g = testdata$water %/% 3)
sdc_t <- createSdcObj(td_g, keyVars = keys, weightVar = "household_weights",
                      ghostVars = list(list("water", "water_g")))
lsupp <- data.frame(risk = get.sdcMicroObj(sdc_t, "risk")$individual[, "risk"])
for (th in c(0.15, 0.05)) {
  for (kv in c("water", "relat")) {
    res <- localSupp(sdc_t, threshold = th, keyVar = kv)
    out <- get.sdcMicroObj(res, "manipKeyVars")
    nm <- paste0(kv, "_", sub("\\.", "", format(th)))
    lsupp[[paste0("blanked_", nm)]] <- as.integer(is.na(out[[kv]]))
    lsupp[[paste0("water_g_blanked_", nm)]] <-
      as.integer(is.na(get.sdcMicroObj(res, "manipGhostVars")$water_g))
  }
}
write_table(lsupp, "localsupp_testdata.csv.gz", gz = TRUE)

# 8d. pram within strata (sdcMicro keeps the last stratum's matrix) and with NA
pram2_rows <- list()
calc_rs <- function(counts, pds, alpha) {  # calcTransitionMatrix given its draws
  L <- length(counts)
  P <- matrix((1 - pds) / (L - 1), L, L)
  diag(P) <- pds
  p <- counts / sum(counts)
  Q <- P
  for (k in seq(L)) {
    s <- sum(p * P[, k])
    for (j in seq(L)) Q[k, j] <- P[j, k] * p[j] / s
  }
  alpha * (P %*% Q) + (1 - alpha) * diag(L)
}
pram2_case <- function(name, f, strata, pd, alpha, seed) {
  L <- nlevels(f)
  df <- data.frame(x = f)
  set.seed(seed)
  res <- if (is.null(strata)) pram(df, variables = "x", pd = pd, alpha = alpha) else
    pram(data.frame(df, s = strata), variables = "x", strata_variables = "s", pd = pd,
         alpha = alpha)
  Rs <- attr(res, "pram_params")$x$Rs
  # the draws: per stratum (sorted labels) runif(L), then one uniform per record drawn
  # (sample with prob, fewer than 200 levels); the last stratum's diagonal is rebuilt
  st <- if (is.null(strata)) factor(rep(1, length(f))) else factor(strata)
  last <- tail(levels(st), 1)
  set.seed(seed)
  skip <- 0
  for (s in levels(st)) {
    pds <- runif(L, pd, 1)
    n_s <- sum(st == s & !is.na(f))
    if (s != last) {
      invisible(runif(n_s))
      skip <- skip + L + n_s
    }
  }
  in_last <- st == last & !is.na(f)
  counts <- as.numeric(table(f[in_last]))
  add_scalar2(paste0("pram_", name, "_rebuilt_max_abs_diff"),
              max(abs(calc_rs(counts, pds, alpha) - Rs)))
  for (i in seq_len(L)) {
    pram2_rows[[length(pram2_rows) + 1]] <<- data.frame(
      case = name, pd = pd, alpha = alpha, seed = seed, stratum = last, skip = skip,
      level = levels(f)[i], count = counts[i], diagonal_drawn = pds[i],
      matrix(Rs[i, ], nrow = 1, dimnames = list(NULL, paste0("to_", seq_len(L)))))
  }
  invisible(res$x_pram)
}
pram2_case("water_by_urbrur", factor(testdata$water), testdata$urbrur, 0.8, 0.5, 31)
pram2_case("roof_by_sex_urbrur", factor(testdata$roof),
           paste0(testdata$sex, "_", testdata$urbrur), 0.6, 0.7, 32)
water_na <- testdata$water
water_na[seq(23, length(water_na), by = 23)] <- NA  # as in 8a
pna <- pram2_case("water_na", factor(water_na), NULL, 0.8, 0.5, 33)
pram2_cols <- unique(unlist(lapply(pram2_rows, names)))
pram2_rows <- lapply(pram2_rows, function(d) {
  for (cn in setdiff(pram2_cols, names(d))) d[[cn]] <- NA
  d[, pram2_cols]
})
write_table(do.call(rbind, pram2_rows), "pram_wave2_matrices.csv")
write_table(data.frame(water_na_pram = as.integer(as.character(pna))),
            "pram_wave2_water_na.csv.gz", gz = TRUE)

# 8e. recordSwap on testdata: households ori_hid, geography urbrur > water, donors of
# the same roof, risk by sex x hhcivil, electcon carried along
rs_hier <- c("urbrur", "water")
rs_risk <- c("sex", "hhcivil")
ord <- order(testdata$ori_hid)  # recordSwap sorts by hid; testdata is sorted already
stopifnot(identical(ord, seq_len(nrow(testdata))))
cols <- c("ori_hid", rs_hier, rs_risk)
d_rs <- data.table::transpose(data.table::as.data.table(testdata[, cols]))
risk_rs <- do.call(rbind, sdcMicro:::setRisk_cpp(d_rs, hierarchy = 1:2,
                                                 risk_variables = 3:4, hid = 0))
lev_rs <- sdcMicro:::setLevels_cpp(lapply(seq_len(nrow(risk_rs)), function(i) risk_rs[i, ]),
                                   1 / 3)
swap <- data.frame(risk_urbrur = risk_rs[, 1], risk_water = risk_rs[, 2], level = lev_rs)
for (case in list(list(rate = 0.05, seed = 41), list(rate = 0.1, seed = 42),
                  list(rate = 0.2, seed = 43))) {
  out <- suppressMessages(suppressWarnings(recordSwap(
    testdata, hid = "ori_hid", hierarchy = rs_hier, similar = "roof",
    risk_variables = rs_risk, k_anonymity = 3, swaprate = case$rate,
    carry_along = "electcon", return_swapped_id = TRUE, seed = case$seed,
    log_file_name = file.path(tempdir(), "TRS_logfile.txt"))))
  out <- as.data.frame(out)
  stopifnot(identical(out$ori_hid, testdata$ori_hid))
  nm <- paste0("rate", sub("0\\.", "", format(case$rate)), "_s", case$seed)
  for (v in c(rs_hier, "electcon", "roof", "ori_hid_swapped")) {
    swap[[paste0(nm, "_", v)]] <- out[[v]]
  }
}
write_table(swap, "recordswap_testdata.csv.gz", gz = TRUE)
write_table(data.frame(name = names(scalars2), value = unlist(scalars2)),
            "scalars_wave2.csv")

# ------------------------------------------------------------------ stamp
write_table(data.frame(name = names(scalars), value = unlist(scalars)), "scalars.csv")
writeLines(c(
  paste0("R: ", R.version.string),
  paste0("sdcMicro: ", as.character(packageVersion("sdcMicro"))),
  paste0("MASS: ", as.character(packageVersion("MASS"))),
  paste0("RNG: ", paste(RNGkind(), collapse = ", ")),
  paste0("date: ", format(Sys.Date())),
  paste0("command: R_LIBS=<lib> Rscript tests/data/sdcmicro_r/protection.R ",
         "/path/to/shared/data/sdcmicro tests/data/sdcmicro_r/protection")
), file.path(out_dir, "stamp.txt"))
