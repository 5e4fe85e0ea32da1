"""Every default value of the public API, in one place.

Functions take their defaults from here (``n_boot: int = defaults.N_BOOT``); the ``.uqcal``
accessor, the CLI and the report delegate to the functions without restating them. Changing a
value here changes it everywhere.
"""

#: Variable names of the two roles (``E=``, ``uE=`` on every analysis).
E = "E"
UE = "uE"
#: The binning variable of binned statistics and local analyses.
BY = "uE"

#: Bootstrap replicates of the intervals of global statistics (METHODS §4): the default of
#: :func:`xuqcal.bootstrap` and :func:`xuqcal.compare`, the ceiling of ``n_boot="auto"``, and the
#: fixed count with which the published tables are reproduced (``validate(..., n_boot=N_BOOT)``).
N_BOOT = 10_000
#: Simulated data sets of a simulated reference (METHODS §5): the default of
#: :func:`xuqcal.simulate`, the ceiling of ``n_mc="auto"``, and the fixed count of the published
#: tables (``validate(..., n_mc=N_MC)``).
N_MC = 10_000
#: ``n_boot="auto"`` / ``n_mc="auto"`` (:mod:`xuqcal.analysis.precision`): the largest Monte
#: Carlo standard error of a deciding ζ (absolute up to ζ = ±1, relative beyond); the
#: ceilings are N_BOOT and N_MC. 0.025: two standard errors within 0.05, so that an auto run's
#: deciding ζ lie within ±0.05 of the converged (10 000-replicate) values (0.05, the
#: first default, let zm's ζ differ by 0.073 at M = 2e6).
MC_PRECISION = 0.025
#: Replicates of the first round of a precision-driven run, and the least growth of a round.
AUTO_FIRST = 500
AUTO_STEP = 250
#: Confidence level of every interval.
LEVEL = 0.95
#: Seed of the counter-based random streams.
SEED = 0
#: Generative distributions D of simulated references (normal and Student's t(6)).
GENERATORS = ("normal", "t6")
#: Generators of :func:`xuqcal.validate` (and of the CLI, the report and the summary): those
#: of GENERATORS and the data-informed ``tfit`` (a Student-t with ν fitted to the z-scores).
#: A statistic whose references differ between them is decided when they all lead to the same
#: decision (docs/design.md, "Deciding when the generators agree").
VALIDATION_GENERATORS = (*GENERATORS, "tfit")
#: Whether :func:`xuqcal.validate` also simulates the references of statistics that have a
#: predefined reference (their Sim/Sim2 ζ, for comparison only): no, only what verdicts need.
ALL_SCHEMES = False
#: Heavy-tail screening of :func:`xuqcal.validate`: above this robust skewness β_GM of Z²
#: the statistics that heavy tails make unreliable (ZMS) are "not testable" instead of pass or
#: fail (P. Pernot, arXiv 2408.13089, 2024). β_GM(Z²) is about 0.64 for normal errors.
HEAVY_TAIL_THRESHOLD = 0.85
#: Heavy-tail screening of the bins of local analyses (ErrViewLib's ``skewup``, P. Pernot): a
#: bin whose robust skewness β_GM is above its threshold is flagged ``heavy_tail`` and drawn
#: greyed out. β_GM of Z² per bin of an LZMS analysis (:func:`xuqcal.local`, ``plotLZMS``'s
#: ``skewup = 0.8``); β_GM of uE² and of E² per bin of a reliability diagram
#: (:func:`xuqcal.reliability`, ``plotRelDiag``'s ``skewupUnc = 0.6`` and ``skewupErr = 0.8``).
#: The local coverage (:func:`xuqcal.curves.local_coverage`) screens with HEAVY_TAIL_THRESHOLD,
#: as the PICP of :func:`xuqcal.validate` does.
HEAVY_TAIL_THRESHOLD_LOCAL = 0.8
HEAVY_TAIL_THRESHOLD_UE2 = 0.6
HEAVY_TAIL_THRESHOLD_E2 = 0.8

#: Nominal coverage levels of interval-based validation (PICP, local coverage) and of
#: conformal recalibration: the ±1σ and ±1.96σ levels of a normal distribution.
COVERAGE_LEVELS = (0.683, 0.95)
#: A coverage is valid when its interval overlaps [p - COVERAGE_TOLERANCE, p + COVERAGE_TOLERANCE]
#: (P. Pernot, arXiv 2408.13089, 2024).
COVERAGE_TOLERANCE = 0.005

#: Bins of a PIT histogram and of its chi-square uniformity test.
N_BINS_PIT = 10

#: Bins of the binned statistics (ENCE, UCE, ZMSE), reliability diagrams and local coverage,
#: at most: their ``n_bins=None`` is the recommended number for M points,
#: ``min(N_BINS, M // MIN_POINTS_PER_BIN_LOCAL)`` (:func:`xuqcal.core.binning.resolve_n_bins`;
#: N_BINS from M = 400 on).
N_BINS = 20
#: Bins of local z-score analyses (LZM, LZMS, ...; METHODS §6), at most: as N_BINS
#: (N_BINS_LOCAL from M = 2000 on).
N_BINS_LOCAL = 100
#: Bins learned by BVS recalibration (METHODS §8).
N_BINS_RECALIBRATION = 40
#: Bins of the conditional scores of a recalibration (S_con, S_ada, f_v).
N_BINS_SCORES = 100
#: Least number of points per bin of a per-bin analysis (local z-score analyses, reliability
#: diagrams, local coverage, adversarial groups): below it a per-bin interval rests on a
#: handful of points and f_v is noise, so the analyses warn
#: (:class:`xuqcal.core.binning.FewPointsPerBinWarning`) and the report and the recommended
#: number of bins (:func:`xuqcal.core.binning.recommended_n_bins`) never go below it
#: (METHODS §7 uses bins of at least 20 points too).
MIN_POINTS_PER_BIN_LOCAL = 20
#: The default window of running statistics is M / RUNNING_WINDOW_DIVISOR points (METHODS §6:
#: M/100), and never fewer than MIN_POINTS_PER_BIN_LOCAL (nor more than M): see
#: :func:`xuqcal.analysis.running.default_window`.
RUNNING_WINDOW_DIVISOR = 100

#: Bootstrap replicates of the intervals of mean scores (proper_scores, interval_coverage):
#: none unless asked (the scores compare models; their intervals cost a pass per replicate).
N_BOOT_SCORES = 0
#: Bootstrap replicates of the per-bin intervals of local analyses.
N_BOOT_LOCAL = 5000
#: Bootstrap replicates of the per-group intervals of adversarial group validation.
N_BOOT_GROUPS = 1000
#: Random groups per size of adversarial group validation (:func:`xuqcal.adversarial_groups`),
#: and the fewest points of a group.
N_GROUPS_ADVERSARIAL = 200
MIN_COUNT_ADVERSARIAL = 100
#: Random groups per size, control sets and fewest points of a group of the worst-group
#: calibration curve (:func:`xuqcal.worst_group_calibration`; ErrViewLib's ``plotAGV``).
N_GROUPS_WORST = 100
N_MC_WORST = 500
MIN_COUNT_WORST = 50
#: Random orders of the points of :func:`xuqcal.order_sensitivity`.
N_ORDERS = 1000
#: Fewest points of a stratum: strata bins of a stratified variable (``binning="strata"``,
#: METHODS §3) and the merged strata of :func:`xuqcal.merge_strata` (ErrViewLib's ``popMin``).
MIN_COUNT_STRATA = 100
MIN_COUNT_MERGED_STRATA = 50
#: Bootstrap replicates of the per-bin intervals of reliability diagrams.
N_BOOT_RELIABILITY = 2000
#: Counts of the whole validation, in Python as on the CLI (:func:`xuqcal.validate` and the
#: accessor's ``validate``, :func:`xuqcal.summary`, :func:`xuqcal.report.report`; the CLI's
#: validate, report and demo): "auto", as many as MC_PRECISION needs, at most N_BOOT and N_MC
#: (one default); the same counts and seed give the same numbers from every entry
#: point. Explicit counts (N_BOOT, N_MC) give the fixed-count results, lazy on Dask-backed data.
N_BOOT_VALIDATION = "auto"
N_MC_VALIDATION = "auto"
#: Simulated data sets of the reference band of a confidence curve.
N_MC_CURVE = 1000
#: Simulated data sets of the f_v reference of a recalibration evaluation.
N_MC_SCORES = 1000
#: Simulated error sets of the reference of :func:`xuqcal.calibration_scores` (0: none, the
#: scores only; ErrViewLib's ``calibScoresProbRef`` on request).
N_MC_CALIBRATION_SCORES = 0
#: Synthetic data sets per cell of the validation-probability study.
N_MC_STUDY = 500
#: Synthetic data sets per cell of sensitivity cubes and the size × bins study.
N_MC_CUBE = 5000
#: Bootstrap replicates of the full-set intervals of an ablation curve.
N_BOOT_ABLATION = 5000

#: Resolution of the report's raster figures, in pixels per inch: twice the 96 CSS pixels per
#: inch at which the page shows them (figures stay sharp on HiDPI screens); also the resolution
#: of the rasterized parts of SVG figures.
REPORT_DPI = 192
#: File format of the report's figures ("png" or "svg").
REPORT_FIGURE_FORMAT = "png"

#: Most Dask tasks along ``replicate`` when the chunk size comes from the option
#: ``replicate_chunk``: beyond it the chunks grow, so that building the graph stays quick and
#: the progress display starts at once (``n_boot=10**8`` gave 10**5 tasks, whose graph took
#: minutes to build before any progress was shown). The chunking changes no value.
MAX_REPLICATE_TASKS = 1000

#: Least number of points per bin of Harrell–Davis bins (``binning="hd"``, ErrViewLib's
#: ``genIntervals`` ``popMin``): fewer bins are made when ``M / n_bins`` is below it.
POP_MIN_HD = 30

#: The conventions on which xuqcal and P. Pernot's R code (ErrViewLib, the 2024_PICP study)
#: differ, per convention set: the default of each parameter named here is ``None``, read from
#: the option ``conventions`` (:func:`xuqcal.set_options`, default ``"xuqcal"``); an argument
#: given wins. See docs/conventions.rst, "The R code's conventions".
#:
#: - ``coverage_rule``: the factor and target of a PICP / local coverage at level p:
#:   ``"quantile"``, k = Φ⁻¹((1 + p) / 2) against p; ``"pernot2024"``, k rounded to two
#:   decimals (1, 1.96, 2.58) and, at p = 0.683, the target 0.67 (2024_PICP);
#: - ``ci_method``: the binomial interval of a local coverage and of f_v: ``"wilsoncc"``
#:   (Wilson with continuity correction) or ``"wilson"`` (ErrViewLib ``plotLCP``'s default);
#: - ``nu_method``: the fit of ν of the Student-t coverage factor: ``"ml"`` or ``"ks"``
#:   (:func:`xuqcal.core.coverage.fit_student_nu`);
#: - ``binning``: the bins of local analyses: ``"equal"`` (floor(b M / N)) or ``"hd"``
#:   (Harrell–Davis break points, POP_MIN_HD; ErrViewLib ``genIntervals``);
#: - ``band``: the per-bin band of a PIT histogram: ``"binomial"`` or ``"poisson"``
#:   (ErrViewLib ``plotPIT``).
CONVENTIONS = {
    "xuqcal": {"coverage_rule": "quantile", "ci_method": "wilsoncc", "nu_method": "ml",
               "binning": "equal", "band": "binomial"},
    "errviewlib": {"coverage_rule": "pernot2024", "ci_method": "wilson", "nu_method": "ks",
                   "binning": "hd", "band": "poisson"},
}
#: The convention set of the option ``conventions`` by default.
CONVENTION_SET = "xuqcal"
#: The values each convention parameter accepts (:func:`xuqcal.options.convention`; the
#: ``binning`` of :func:`xuqcal.local` also takes the other schemes of
#: :func:`xuqcal.make_bins`, "strata" and "grid").
CONVENTION_CHOICES = {
    "coverage_rule": ("quantile", "pernot2024"),
    "ci_method": ("wilsoncc", "wilson"),
    "nu_method": ("ml", "ks"),
    "binning": ("equal", "hd"),
    "band": ("binomial", "poisson"),
}
