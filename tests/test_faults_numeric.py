"""Fault catalogue of issue 11, Python API and numerical classes (class 2's ν = ∞ hang, class 3
tracebacks, class 5 silent NaN/inf/wrong numbers), with hypothesis fuzzing.

Each test pins one class with several cases. The contract everywhere: a call either raises a
``ValueError`` whose message starts with the parameter (or variable) name and says what is
wrong, before any computation for argument errors, or returns finite numbers; an undefined
statistic is NaN/inf only with a warning of xuqcal that names it
(:class:`~xuqcal.UndefinedStatisticWarning`,
:class:`~xuqcal.DegenerateIntervalWarning`).
"""

from __future__ import annotations

import math
import re
import time
import warnings

import dask
import dask.array as da
import numpy as np
import pytest
import xarray as xr
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import xuqcal
from xuqcal import studies
from xuqcal.core import kernels as K
from xuqcal.core.checks import minimum_replicates
from xuqcal.core.intervals import DegenerateIntervalWarning
from xuqcal.core.statistics import PreparedData, UndefinedStatisticWarning, codes_of, get_statistics
from xuqcal.studies import cube

SCALE_FREE = ("zms", "rce", "zm", "zv", "cc", "ence", "zmse")
UNITS = {"mse": 2, "rmse": 1, "mv": 2, "rmv": 1, "uce": 2}  # power of the scale they carry


@pytest.fixture(scope="module")
def data() -> xr.Dataset:
    return xuqcal.synthetic.nig(300, nu=6, seed=11)


def _exploding(ds: xr.Dataset) -> xr.Dataset:
    """``ds`` with Dask data whose computation raises: an argument check that computed the
    data would fail with this error instead of its own."""
    def boom(block):
        raise AssertionError("the data were computed")

    lazy = ds.chunk({"sample": 100})
    return lazy.assign(E=lazy.E.copy(data=da.map_blocks(boom, lazy.E.data, dtype=float)))


# ------------------------------------------------------------ class 3: tracebacks -> errors


def _cases_class3():
    ds = xuqcal.synthetic.nig(300, nu=6, seed=11)
    one = ds.isel(sample=[0])
    two = ds.isel(sample=[0, 1])
    seed_message = r"^seed: expected an integer from 0 to 2\*\*64 - 1"
    return [
        ("stats(3)", lambda d: xuqcal.stats(d, 3), r"^statistics: expected a statistic key"),
        ("accessor stats(3)", lambda d: d.uqcal.stats(3), r"^statistics: expected a statistic"),
        ("stats([1])", lambda d: xuqcal.stats(d, [1]), r"^statistics: expected statistic keys"),
        ("chunks=1.5", lambda d: xuqcal.bootstrap(d, n_boot=100, chunks=1.5), r"^chunks: expected"),
        ("chunks=0", lambda d: xuqcal.bootstrap(d, n_boot=100, chunks=0), r"^chunks: expected"),
        ("chunks=[0, 100]", lambda d: xuqcal.simulate(d, n_mc=100, chunks=[0, 100]),
         r"^chunks: expected"),
        ("seed 2**70 bootstrap", lambda d: xuqcal.bootstrap(d, n_boot=100, seed=2**70),
         seed_message),
        ("seed 2**70 validate", lambda d: xuqcal.validate(d, ["zms"], n_boot=100, n_mc=100,
                                                          seed=2**70), seed_message),
        ("seed 2**64 reference", lambda d: xuqcal.simulate(d, n_mc=100, seed=2**64), seed_message),
        ("seed -1 local", lambda d: xuqcal.local(d, seed=-1), seed_message),
        ("seed 1.0 accessor", lambda d: d.uqcal.validate(seed=1.0), seed_message),
        ("seed True nig", lambda d: xuqcal.synthetic.nig(10, nu=6, seed=True), seed_message),
        ("seed 2**65 cube", lambda d: cube.build(["ence"], size=[100], n_bins=[2], nu=[6],
                                                 seed=2**65), seed_message),
        ("level 1", lambda d: xuqcal.bootstrap(d, level=1.0), r"^level: expected a confidence"),
        ("level nan", lambda d: xuqcal.validate(d, level=math.nan), r"^level: expected"),
        ("level True", lambda d: d.uqcal.bootstrap(level=True), r"^level: expected"),
        ("method 3", lambda d: xuqcal.bootstrap(d, method=3), r"^method: unknown interval"),
        ("keep_replicates", lambda d: xuqcal.bootstrap(d, keep_replicates="yes"),
         r"^keep_replicates: expected True or False"),
        ("generator 3", lambda d: xuqcal.simulate(d, generators=3), r"^generators: "),
        ("zv one point", lambda d: xuqcal.stats(one, ["zm", "zv"]),
         r"^statistics: zv needs at least 2 points, but the data have 1"),
        ("bootstrap one row", lambda d: xuqcal.bootstrap(one, ["zms"], n_boot=100),
         r"^ds: the bootstrap needs at least 2 points"),
        ("bootstrap zv two rows", lambda d: xuqcal.bootstrap(two, ["zv"], n_boot=100),
         r"^statistics: zv needs at least 3 points \(the BCa interval uses leave-one-out"),
        ("validate one row", lambda d: xuqcal.validate(one, ["zms"], n_boot=100, n_mc=100),
         r"^ds: the bootstrap needs at least 2 points"),
        ("cube nu=0.001", lambda d: cube.build(["ence"], size=[100], n_bins=[2], nu=[0.001]),
         r"^nu: expected ν >= 0.2, got 0.001"),
        ("n_mc 1.5 curve", lambda d: xuqcal.curves.confidence_curve(d, n_mc=1.5),
         r"^n_mc: expected an integer"),
        ("rank_correlation(3)", lambda d: xuqcal.rank_correlation(d, 3), r"^variables: "),
        ("describe one row", lambda d: xuqcal.describe(one), r"^ds: describe needs at least 3"),
        ("recalibration seed", lambda d: xuqcal.recalibration.fit(d, "temperature", seed=-2),
         seed_message),
        ("statistic [1] local", lambda d: xuqcal.local(d, [1]), r"^statistic: local"),
        ("ds not a Dataset", lambda d: xuqcal.bootstrap(d.E), r"^ds: expected an xarray"),
        ("running window 1.5", lambda d: xuqcal.running_statistics(d, window=1.5),
         r"^window: expected an integer"),
        ("ablation n_boot 2", lambda d: xuqcal.curves.ablation(d, n_boot=2),
         r"^n_boot: expected an integer >= 40"),
        ("unknown statistic", lambda d: xuqcal.validate(d, ["zms", "ZMS"]),
         r"^statistics: unknown statistic 'ZMS'"),
        ("n_bins 0", lambda d: xuqcal.stats(d, ["ence"], n_bins=0), r"^n_bins: expected"),
        ("E missing", lambda d: xuqcal.stats(d, ["zms"], E="err"),
         r"^E: the dataset has no variable 'err'"),
    ]


@pytest.mark.parametrize(("case", "call", "message"), _cases_class3(),
                         ids=[c[0] for c in _cases_class3()])
def test_class3_bad_arguments_are_errors_before_any_computation(data, case, call, message):
    """Every bad argument is a ``ValueError`` naming the parameter, raised before any work:
    the data are Dask arrays whose computation fails, so a check that read them (or a
    computation that started) would raise that error instead."""
    with pytest.raises(ValueError, match=message):
        call(_exploding(data))


@pytest.mark.parametrize("statistics", [["zv"], ["zm", "zms", "zv", "rce", "nll"], ["cc"],
                                        ["ence", "uce", "zmse"]])
def test_class3_kernels_never_raise_zero_division(statistics):
    """The Numba kernels use NumPy's error model: a division by zero (a one-point variance, a
    leave-one-out value of one point, an empty bin) is inf/NaN, never ZeroDivisionError."""
    codes = codes_of(get_statistics(statistics))
    one = PreparedData.from_arrays(np.array([0.5]), np.array([1.0]), needs_bins=False,
                                   n_bins=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedStatisticWarning)
        values = one.evaluate(codes)
    assert values.shape == (len(statistics),)
    out = np.empty((1, codes.size))
    moment = codes[codes < K.N_MOMENT]
    if moment.size:  # leave-one-out of one point: n - 1 = 0 points
        totals = K.moment_totals(one.e2, one.u2, one.z, one.z2, one.lnu2, one.z_shift)
        K.jackknife_moments(moment, one.e2, one.u2, one.z, one.z2, one.lnu2, one.z_shift,
                            totals, 0, 1, out[:, :moment.size])
    binned = codes[np.isin(codes, K.BINNED_CODES)]
    if binned.size:  # two bins for one point: an empty bin
        K.jackknife_binned(binned, 2, one.e2, one.u2, one.z2,
                           K.binned_prefix_sums(one.e2, one.u2, one.z2), 0, 1,
                           out[:, :binned.size])
    zero_u = one.u2 * 0.0  # uE² underflowed to 0 (the old path of data scaled by 1e-170)
    K.evaluate_counts(codes, np.ones(1, np.int32), 1, one.packed, one.e2, zero_u, one.z2,
                      one.z_shift, one.order_u, one.tie_u, one.order_e, one.tie_e,
                      K.make_work(1, 1), out[0])


# --------------------------------------------------------------- class 5: scale safety


def _stats(ds: xr.Dataset, keys, n_bins: int = 5) -> dict[str, float]:
    return dict(zip(keys, xuqcal.stats(ds, list(keys), n_bins=n_bins).values.tolist(),
                    strict=True))


@pytest.mark.parametrize("j", [-300, -200, -160, -150, -100, -50, 50, 100, 150, 160, 200, 300])
def test_class5_scale_free_statistics_do_not_depend_on_the_scale(data, j):
    """E, uE × 10^j: the scale-free statistics agree with the unscaled ones to 1e-12 (the only
    difference is the rounding of E 10^j and uE 10^j, ~1e-16 relative); nll shifts by exactly
    j ln 10 (its additive ln-scale constant); unit-bearing statistics scale with 10^j. Before
    the fix, 1e300 gave NaN rce/ence and inf nll, 1e-160 an rce wrong in the 4th digit."""
    keys = [*SCALE_FREE, "nll", "rmse", "rmv"]
    base = _stats(data, keys)
    scaled = _stats(data * 10.0**j, keys)
    for key in SCALE_FREE:
        assert scaled[key] == pytest.approx(base[key], rel=1e-12, abs=1e-12), key
    assert scaled["nll"] - j * math.log(10.0) == pytest.approx(base["nll"], abs=1e-10)
    for key in ("rmse", "rmv"):
        assert scaled[key] == pytest.approx(base[key] * 10.0**j, rel=1e-12), key


@pytest.mark.parametrize("j", [-1000, -700, -300, 300, 600, 900])
def test_class5_power_of_two_scaling_is_exact(data, j):
    """× 2^j is exact in floating point, and so is the internal rescaling: every statistic but
    nll is bit-identical (unit-bearing ones multiplied by 2^j or 4^j exactly), and so are the
    bootstrap intervals of the scale-free statistics."""
    keys = [*SCALE_FREE, *UNITS]
    scaled_data = data.copy(data={"E": np.ldexp(data.E.values, j),
                                  "uE": np.ldexp(data.uE.values, j)})
    base = _stats(data, keys)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        scaled = _stats(scaled_data, keys)
    overflowing = {k for k, p in UNITS.items() if p * j > 1000}  # beyond 2^1024: inf, named
    assert sorted(str(w.message).split()[0] for w in caught) == sorted(overflowing)
    for key in SCALE_FREE:
        assert scaled[key] == base[key], key
    for key, power in UNITS.items():
        if abs(power * j) <= 1000:
            assert scaled[key] == math.ldexp(base[key], power * j), key
    a = xuqcal.bootstrap(data, list(SCALE_FREE), n_boot=200, n_bins=5).compute()
    b = xuqcal.bootstrap(scaled_data, list(SCALE_FREE), n_boot=200, n_bins=5).compute()
    for name in ("estimate", "ci_low", "ci_high", "se"):
        np.testing.assert_array_equal(a[name].values, b[name].values)


def test_class5_scale_safe_everywhere_else(data):
    """Other places that square E or uE: the simulated references, validate, describe,
    confidence curves, local analyses and the recalibration scores give the same scale-free
    numbers for data × 2^900 (exact scaling) and finite unit-bearing ones."""
    big = data.copy(data={"E": np.ldexp(data.E.values, 900), "uE": np.ldexp(data.uE.values,
                                                                          900)})
    keys = ["zms", "rce", "cc", "ence", "zmse"]
    ref_a = xuqcal.simulate(data, keys, n_mc=50, n_bins=5).compute()
    ref_b = xuqcal.simulate(big, keys, n_mc=50, n_bins=5).compute()
    np.testing.assert_array_equal(ref_a["mean"].values, ref_b["mean"].values)
    val_a = xuqcal.validate(data, keys, n_boot=100, n_mc=50, n_bins=5)
    val_b = xuqcal.validate(big, keys, n_boot=100, n_mc=50, n_bins=5)
    np.testing.assert_array_equal(val_a.zeta.values, val_b.zeta.values)
    np.testing.assert_array_equal(val_a.verdict.values, val_b.verdict.values)
    d_a = xuqcal.describe(data)
    with pytest.warns(UndefinedStatisticWarning, match="^uE2_scale is undefined: its value "
                                                      "exceeds the float64 range"):
        d_b = xuqcal.describe(big)  # uE² ~ 2^1800
    for name in ("relative_bias", "beta_gm", "kappa_cs", "beta_gm_uE"):
        np.testing.assert_allclose(d_b[name].values, d_a[name].values, rtol=1e-12)
    assert d_b.sd.sel(variable="E").item() == math.ldexp(d_a.sd.sel(variable="E").item(), 900)
    c_a = xuqcal.curves.confidence_curve(data, n_mc=20)
    c_b = xuqcal.curves.confidence_curve(big, n_mc=20)
    np.testing.assert_array_equal(np.ldexp(c_a.value.values, 900), c_b.value.values)
    np.testing.assert_array_equal(c_a.in_band.values, c_b.in_band.values)
    for statistic in ("zms", "rce"):
        l_a = xuqcal.local(data, statistic, n_bins=5, n_boot=100)
        l_b = xuqcal.local(big, statistic, n_bins=5, n_boot=100)
        np.testing.assert_array_equal(l_a.ci_low.values, l_b.ci_low.values)
    r_a = xuqcal.reliability(data, n_bins=5, n_boot=100)
    r_b = xuqcal.reliability(big, n_bins=5, n_boot=100)
    np.testing.assert_array_equal(np.ldexp(r_a.rmse_high.values, 900), r_b.rmse_high.values)
    cube_a = cube.build_from({"a": data}, ["cc", "ence", "zms"], n_bins=[5], n_mc=30)
    cube_b = cube.build_from({"a": big}, ["cc", "ence", "zms"], n_bins=[5], n_mc=30)
    np.testing.assert_array_equal(cube_a["mean"].values, cube_b["mean"].values)
    with pytest.raises(ValueError, match=r"^statistics: mse of dataset 'a' \(uE of order"):
        cube.build_from({"a": big}, ["mse"], n_bins=[5], n_mc=30)
    s_a = xuqcal.recalibration.scores(data, features=(), n_bins=5, n_boot=100)
    s_b = xuqcal.recalibration.scores(big, features=(), n_bins=5, n_boot=100)
    for name in ("zms", "s_cal", "ence"):
        np.testing.assert_array_equal(s_a[name].values, s_b[name].values)


@pytest.mark.parametrize(("E", "uE", "message"), [
    ([1.0, 2.0, -1.0, 0.5], [1e-300, 1.0, 1.0, 2.0], r"E, uE: 1 of 4 z-scores E/uE overflow"),
    ([1e308, 2.0, -1.0, 0.5], [1.0, 1.0, 1.0, 2.0], r"E, uE: 1 of 4 z-scores E/uE overflow"),
    ([1.0, 1e200, -1.0, 0.5], [1.0, 1e40, 1.0, 2.0], r"E, uE: 1 of 4 z-scores .*\(rows 1\)"),
    ([1.0, 1e300, -1.0, 0.5], [1.0, 1e300, 1e-300, 2.0],
     r"uE: the values span too many orders of magnitude"),
])
def test_class5_overflows_are_errors_naming_the_rows(E, uE, message):
    """A z-score whose square overflows (one uE = 1e-300 with E ~ 1, one E = 1e308), or data
    whose squares cannot be held at one scale, is refused by validate_dataset (so by read_csv
    and every constructor) naming the variables, the problem and the rows; the analyses (and
    the accessor, which delegates to them) refuse it too when they compute: never an
    'undecided' verdict."""
    with pytest.raises(ValueError, match=message):
        xuqcal.from_arrays(E, uE)
    ds = xr.Dataset({"E": ("sample", np.array(E)), "uE": ("sample", np.array(uE))})
    with pytest.raises(ValueError, match=r"^(E, uE|uE): .*\(rows \d"):
        ds.uqcal.stats(["zms"])
    with pytest.raises(ValueError, match=r"^(E, uE|uE): "):
        xuqcal.stats(ds, ["zms"]).compute()
    with pytest.raises(ValueError, match=r"^(E, uE|uE): "):
        xuqcal.validate(ds, ["zms"], n_boot=40, n_mc=10, n_bins=1)


def test_class5_unit_bearing_overflow_is_named(data):
    """mse of data ~1e300 exceeds float64: inf with a warning naming it; the scale-free
    statistics of the same call are finite."""
    big = data * 1e300
    with pytest.warns(UndefinedStatisticWarning, match=r"^mse is undefined: its value "
                                                        r"exceeds the float64 range"):
        values = _stats(big, ["mse", "zms", "rce"])
    assert values["mse"] == math.inf
    assert math.isfinite(values["zms"]) and math.isfinite(values["rce"])


# ---------------------------------------------------------- class 5: undefined statistics


@pytest.mark.parametrize(("change", "undefined"), [
    ("zero E", {"cc": "cc is undefined: E is 0 everywhere",
                "zmse": r"zmse is undefined: E is 0 everywhere \(ln <Z²> = ln 0\)"}),
    ("constant E", {"cc": "cc is undefined: |E| is constant"}),
    ("constant -E/+E", {"cc": "cc is undefined: |E| is constant"}),
    ("constant uE", {"cc": "cc is undefined: uE is constant"}),
    ("zero E in a bin", {"zmse": "zmse is undefined: a bin has <Z²> = 0"}),
])
def test_class5_undefined_statistics_are_named(data, change, undefined):
    """All-zero E, constant |E| or constant uE: each undefined statistic is NaN (or inf) with an
    UndefinedStatisticWarning that names it and the cause; the others are finite."""
    E, uE = data.E.values.copy(), data.uE.values.copy()
    if change == "zero E":
        E[:] = 0.0
    elif change == "constant E":
        E[:] = 0.3
    elif change == "constant -E/+E":
        E = np.where(np.arange(E.size) % 2 == 0, 0.3, -0.3)
    elif change == "constant uE":
        uE[:] = 0.7
    else:
        E[np.argsort(uE, kind="stable")[:60]] = 0.0  # the first of 5 bins of uE
    ds = data.copy(data={"E": E, "uE": uE})
    keys = ["zms", "rce", "zm", "nll", "cc", "ence", "zmse"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        values = _stats(ds, keys)
    messages = [str(w.message) for w in caught if w.category is UndefinedStatisticWarning]
    assert len(messages) == len(undefined), messages
    for key, text in undefined.items():
        assert not math.isfinite(values[key]), key
        assert any(re.match(text, m) for m in messages) or text in messages, (text, messages)
    for key in set(keys) - set(undefined):
        assert math.isfinite(values[key]), key
    assert all(issubclass(w.category, UndefinedStatisticWarning) for w in caught)


def test_class5_undefined_statistics_in_validate(data):
    """validate of constant uE: cc is named (warning) and the others are decided without
    NumPy's arithmetic warnings."""
    ds = data.assign(uE=data.uE * 0 + 0.7)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        v = xuqcal.validate(ds, ["zms", "rce", "cc"], n_boot=100, n_mc=50, n_bins=5)
    assert [str(w.message) for w in caught if w.category is UndefinedStatisticWarning] == [
        "cc is undefined: uE is constant"]
    assert all(w.category.__module__.startswith("xuqcal") for w in caught), \
        [str(w.message) for w in caught]
    assert np.isfinite(v.estimate.sel(statistic=["zms", "rce"]).values).all()


# ------------------------------------------------------------ class 5: n_boot minimum


@pytest.mark.parametrize(("level", "minimum"), [(0.8, 10), (0.9, 20), (0.95, 40), (0.99, 200),
                                                (0.999, 2000)])
def test_class5_n_boot_minimum(data, level, minimum):
    """n_boot >= ceil(2 / (1 - level)): each tail beyond the interval holds at least one
    replicate on average. One less is refused (validate names n_boot, bootstrap n, local n);
    the minimum is accepted."""
    assert minimum_replicates(level) == minimum
    with pytest.raises(ValueError, match=rf"^n_boot: expected an integer >= {minimum} "
                                         rf"\(an interval at level {level:g} needs"):
        xuqcal.validate(data, ["zms"], n_boot=minimum - 1, level=level)
    with pytest.raises(ValueError, match=rf"^n_boot: expected an integer >= {minimum}"):
        xuqcal.bootstrap(data, ["zms"], n_boot=minimum - 1, level=level)
    with pytest.raises(ValueError, match=rf"^n_boot: expected an integer >= {minimum}"):
        xuqcal.local(data, "zms", n_boot=minimum - 1, level=level)
    with pytest.raises(ValueError, match=rf"^n_boot: expected an integer >= {minimum}"):
        xuqcal.curves.ablation(data, n_boot=minimum - 1, level=level)
    with pytest.raises(ValueError, match=rf"^n_boot: expected an integer >= {minimum}"):
        studies.validation_probability([3], size=[100], n_mc=2, n_boot=minimum - 1,
                                       level=level)
    xuqcal.bootstrap(data, ["zms"], n_boot=minimum, level=level)  # lazy: accepted
    assert xuqcal.bootstrap(data, ["zm"], n_boot=2, method="student").sizes["statistic"] == 1


# ------------------------------------------------------------ class 5: generator names


@pytest.mark.parametrize(("names", "canonical"), [
    (["t6.0", "T6", " t 6 ", "t06", "t6.000"], "t6"),
    (["t3.50", "T3.5"], "t3.5"),
    (["Normal", " normal"], "normal"),
    (["normp4.0", "NORMP4"], "normp4"),
])
def test_class5_generator_names_are_normalised(data, names, canonical):
    """One distribution has one name (and so one random stream); two spellings of it in one
    call are refused."""
    for name in names:
        assert xuqcal.get_generator(name).name == canonical
    first, second = names[0], names[1]
    expected = rf"generators: {re.escape(first)} and {re.escape(second)} are the same " \
               rf"distribution \({canonical}\)"
    with pytest.raises(ValueError, match=expected):
        xuqcal.validate(data, ["cc"], generators=[first, second])
    with pytest.raises(ValueError, match=r"^generators: .* are the same distribution"):
        xuqcal.simulate(data, ["cc"], generators=[first, second])
    with pytest.raises(ValueError, match=r"^generators: .* are the same distribution"):
        cube.build(["ence"], size=[100], n_bins=[2], nu=[6], generators=[first, second])


@pytest.mark.parametrize("name", ["t2", "t1.5", "t2.0", "t0.5"])
def test_class5_student_t_needs_finite_variance(data, name):
    with pytest.raises(ValueError, match=r"^generators: .* unit-variance Student-t needs ν > 2"):
        xuqcal.validate(data, ["cc"], generators=["normal", name])


# ----------------------------------------------------- classes 2 and 5: synthetic.nig ν


def test_class2_nig_nu_inf_is_the_limit_and_returns():
    """ν = ∞ used to loop forever in the Gamma sampler: it is the limit uE = 1 exactly."""
    start = time.perf_counter()
    ds = xuqcal.synthetic.nig(1000, nu=float("inf"), seed=3)
    assert time.perf_counter() - start < 5.0
    assert (ds.uE.values == 1.0).all()
    np.testing.assert_array_equal(ds.E.values, xuqcal.get_generator("normal").sample(
        1000, seed=3, purpose="synthetic:nig"))
    assert ds.attrs["nu"] == math.inf


@pytest.mark.parametrize("nu", [0.01, 0.1, 0.19, 0.0, -1.0, math.nan, "6", True, None])
def test_class5_nig_small_or_invalid_nu_is_refused(nu):
    """A ν so small that uE² = (ν/2) / Gamma(ν/2) can overflow (nu=0.01 gave infinite uE with
    only a NumPy warning) is refused naming nu and the reason, and so is a non-number; the
    cube and the studies refuse it before any work."""
    with pytest.raises(ValueError, match=r"^nu: expected "):
        xuqcal.synthetic.nig(1000, nu=nu, seed=0)
    if isinstance(nu, float) and math.isfinite(nu) and nu > 0:
        with pytest.raises(ValueError, match=r"^nu: expected ν >= 0.2"):
            cube.build(["ence"], size=[100], n_bins=[2], nu=[6, nu])
        with pytest.raises(ValueError, match=r"^nu: expected ν >= 0.2"):
            studies.validation_probability([nu], size=[100], n_mc=2, n_boot=40)


@pytest.mark.parametrize("nu", [0.2, 0.3, 1.0])
def test_class5_nig_smallest_accepted_nu_is_finite_and_usable(nu):
    """At the threshold the data are finite and every statistic is computed (rescaled
    internally when uE is huge)."""
    ds = xuqcal.synthetic.nig(20_000, nu=nu, seed=5)
    assert np.isfinite(ds.E.values).all() and (ds.uE.values > 0).all()
    assert np.isfinite(ds.uE.values).all()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        values = xuqcal.stats(xuqcal.validate_dataset(ds), [*SCALE_FREE, "nll"], n_bins=20)
    assert np.isfinite(values.values).all()


# ------------------------------------------------------------------- hypothesis fuzzing

_FINITE = st.floats(-1e3, 1e3, allow_nan=False, allow_infinity=False)
_HUGE = st.floats(1e150, 1e308).flatmap(lambda x: st.sampled_from([x, -x]))
_TINY = st.one_of(st.floats(1e-308, 1e-150), st.sampled_from([5e-324, 2.2e-308]))
_SPECIAL = st.sampled_from([math.nan, math.inf, -math.inf, 0.0, -0.0])
_VALUE = st.one_of(_FINITE, _FINITE, _HUGE, _TINY, _SPECIAL)


@st.composite
def _column(draw, n: int) -> np.ndarray:
    kind = draw(st.sampled_from(["ordinary", "ordinary", "mixed", "constant", "duplicated",
                                 "scaled"]))
    if kind == "ordinary":
        return np.array(draw(st.lists(_FINITE, min_size=n, max_size=n)))
    if kind == "constant":
        return np.full(n, draw(_VALUE))
    if kind == "duplicated":
        pool = draw(st.lists(_VALUE, min_size=1, max_size=3))
        return np.array(draw(st.lists(st.sampled_from(pool), min_size=n, max_size=n)))
    if kind == "scaled":  # ordinary values times a huge or tiny factor
        factor = 10.0 ** draw(st.integers(-300, 300))
        return np.array(draw(st.lists(_FINITE, min_size=n, max_size=n))) * factor
    return np.array(draw(st.lists(_VALUE, min_size=n, max_size=n)), dtype=np.float64)


@st.composite
def _data(draw, min_size: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """E and uE of 1 to 12 points; uE is made positive in 3 cases out of 4 (else the checks of
    uE end most examples)."""
    n = draw(st.integers(min_size, 12))
    E, uE = draw(_column(n)), draw(_column(n))
    if draw(st.integers(0, 3)):
        uE = np.abs(uE)
    return E, uE


_PROBLEMS = ("NaN", "inf", "not positive", "overflow", "span too many orders", "no points")
_FUZZ = settings(max_examples=200, deadline=None, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _assert_named_error(error: ValueError) -> None:
    message = str(error)
    lines = message.splitlines()
    lines = lines[1:] if lines[0].startswith("invalid input data") else lines
    for line in lines:
        assert re.match(r"^\s*(E|uE|E, uE):", line), message
        assert any(p in line for p in _PROBLEMS), message


def _assert_named_warnings(caught, values: dict[str, float]) -> None:
    """NaN/inf values only where a warning of xuqcal names the statistic; no other warning."""
    named = " ".join(str(w.message) for w in caught if issubclass(
        w.category, UndefinedStatisticWarning | DegenerateIntervalWarning))
    for w in caught:
        assert w.category.__module__.startswith("xuqcal"), (w.category, str(w.message))
    for key, value in values.items():
        if not math.isfinite(value):
            assert re.search(rf"\b{key}\b", named), (key, value, named)


@_FUZZ
@given(_data())
def test_fuzz_constructors_and_statistics(arrays):
    """from_arrays and PreparedData.from_arrays (every estimate, bootstrap and simulation goes
    through it): a ValueError naming the variable and the problem, or finite statistics
    (undefined ones named)."""
    E, uE = arrays
    keys = ["zms", "rce", "zm", "zv", "nll", "cc", "mse", "rmv"]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            ds = xuqcal.from_arrays(E, uE)
        except ValueError as error:
            _assert_named_error(error)
            with pytest.raises(ValueError) as direct:
                PreparedData.from_arrays(E, uE, needs_bins=False)
            _assert_named_error(direct.value)
            return
        try:
            values = _stats(ds, keys if E.size > 1 else ["zms", "rce", "nll", "mse"], n_bins=1)
        except ValueError as error:  # statistics that need more points
            assert str(error).startswith("statistics: ") and "needs at least" in str(error)
            return
    _assert_named_warnings(caught, values)
    for key in ("zms", "rce", "zm", "nll"):
        if key in values:
            assert math.isfinite(values[key]), (key, values)


@_FUZZ
@given(_data(), st.sets(st.sampled_from(["zms", "rce", "zm", "zv", "nll", "cc", "ence",
                                         "zmse"]), min_size=1, max_size=3))
def test_fuzz_validate(arrays, statistics):
    """validate: a ValueError naming the variable (or the parameter) and the problem, or
    results whose NaN/inf are named by a warning of xuqcal."""
    E, uE = arrays
    ds = xr.Dataset({"E": ("sample", E), "uE": ("sample", uE)})
    keys = sorted(statistics)
    with warnings.catch_warnings(record=True) as caught, dask.config.set(
            scheduler="synchronous"):
        warnings.simplefilter("always")
        try:
            result = ds.uqcal.validate(keys, n_boot=40, n_mc=20, n_bins=1, seed=1)
        except ValueError as error:
            message = str(error)
            if message.startswith(("statistics: ", "ds: ", "n_bins: ")):
                assert "needs at least" in message, message  # too few points for them
                return
            _assert_named_error(error)
            return
    values = {key: float(result.estimate.sel(statistic=key)) for key in keys}
    _assert_named_warnings(caught, values)
    for key in keys:
        if math.isfinite(values[key]):
            lo, hi = (float(result[v].sel(statistic=key)) for v in ("ci_low", "ci_high"))
            if not (math.isfinite(lo) and math.isfinite(hi)):
                named = " ".join(str(w.message) for w in caught)
                assert re.search(rf"\b{key}\b", named), (key, named)


@st.composite
def _ordinary(draw) -> tuple[np.ndarray, np.ndarray]:
    """Multiples of 1/16 (|E| <= 64, 1/16 <= uE <= 64): distinct values differ by far more than
    the rounding of a multiplication by 10^k, so ranks and bins do not change."""
    n = draw(st.integers(4, 30))
    E = np.array(draw(st.lists(st.integers(-1024, 1024), min_size=n, max_size=n))) / 16.0
    uE = np.array(draw(st.lists(st.integers(1, 1024), min_size=n, max_size=n))) / 16.0
    return E, uE


@settings(max_examples=80, deadline=None, derandomize=True, database=None)
@given(_ordinary(), st.one_of(st.integers(-150, 150), st.integers(-300, 300)))
def test_fuzz_scale_invariance(arrays, k):
    """zms, rce, zm, zv, cc, ence and zmse do not change, and nll changes by k ln 10, when E and
    uE are multiplied by 10^k, |k| <= 150 (asked) and up to 300 (where the old code failed:
    squares underflow below ~1e-154 and overflow above ~1e154).

    Tolerance: each z = E/uE carries at most ~3 ulp (3.3e-16 relative) from the rounding of
    E 10^k, uE 10^k and the division; sums of at most 30 terms add ~30 ulp. So 1e-12 relative
    to the size of the summed terms (max z² for zms/zv, max |z| for zm, 1 for the ratios and
    ranks) leaves a margin of ~100 while the old code was wrong in the 4th digit (1e-160) or
    NaN (1e300). nll also sums ln uE² ~ 2 k ln 10 <= 700: absolute 1e-10."""
    E, uE = arrays
    if not np.any(E):
        E = E + 1.0 / 16.0
    ds = xuqcal.from_arrays(E, uE)
    factor = 10.0**k
    scaled = xuqcal.from_arrays(E * factor, uE * factor)
    keys = [*SCALE_FREE, "nll"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedStatisticWarning)  # cc of constant |E| or uE
        base, other = _stats(ds, keys, n_bins=2), _stats(scaled, keys, n_bins=2)
    z = E / uE
    size = {"zms": np.max(z * z), "zv": np.max(z * z), "zm": np.max(np.abs(z))}
    for key in SCALE_FREE:
        if math.isnan(base[key]):
            assert math.isnan(other[key]), key
            continue
        if math.isinf(base[key]):  # e.g. zmse of a bin whose errors are all 0: |ln 0|
            assert other[key] == base[key], (key, base[key], other[key])
            continue
        tolerance = 1e-12 * max(1.0, size.get(key, 1.0))
        assert abs(other[key] - base[key]) <= tolerance, (key, base[key], other[key])
    assert abs(other["nll"] - k * math.log(10.0) - base["nll"]) <= 1e-10


# ------------------------------------------- more cases of each class, through the whole API
# Found by trying ~600 further cases through every public function and the accessor: each
# list below pins one class of fault (a hang, a raw traceback, a silent wrong or NaN result)
# with the cases that showed it, plus neighbours of the same class.


def _within(seconds: float, call):
    """``call()`` in a daemon thread: a hang fails the test instead of blocking the suite."""
    import threading

    outcome: dict = {}

    def target():
        try:
            outcome["value"] = call()
        except BaseException as error:
            outcome["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"the call did not return within {seconds} s (a hang)"
    if "error" in outcome:
        raise outcome["error"]
    return outcome.get("value")


def _api_data() -> dict[str, xr.Dataset]:
    ds = xuqcal.synthetic.nig(300, nu=6, seed=11)
    rng = np.random.default_rng(0)
    ds = ds.assign(X1=("sample", rng.normal(size=300)), C=("sample", np.full(300, 3.0)),
                   B=("sample", np.arange(300) % 2 == 0))
    two_d = xr.Dataset({"E": (("sample", "model"), rng.normal(size=(50, 2))),
                        "uE": (("sample", "model"), np.ones((50, 2)))})
    two_d["E"][4, 1] = np.nan  # only E: not an absent point (issue 13) but a NaN of slice 1
    return {"ds": ds, "nan_x": ds.assign(X1=ds.X1.where(ds.X1 > 1)),
            "inf_x": ds.assign(X1=ds.X1.where(ds.X1 < 1, np.inf)), "two_d": two_d,
            "bool_e": ds.assign(E=("sample", np.arange(300) % 2 == 0)),
            "date_e": ds.assign(E=("sample", np.arange(300).astype("datetime64[D]"))),
            "complex_e": ds.assign(E=ds.E + 1j), "text_e": ds.assign(E=("sample", ["a"] * 300)),
            "empty": ds.isel(sample=slice(0, 0)),
            "other": xuqcal.synthetic.nig(500, nu=6, seed=1)}


def _cases_api_hangs_and_tracebacks():
    """Hangs and raw tracebacks (KeyError, IndexError, AttributeError, ZeroDivisionError,
    'math domain error', 'Singular matrix') of arguments: now a ValueError naming them."""
    local, curves, intervals = xuqcal.analysis.local, xuqcal.curves, xuqcal.core.intervals
    adv = local.adversarial_groups
    small = cube.build(["ence"], size=[100, 200], n_bins=[2, 4], nu=[6], n_mc=20)
    one_x = cube.build(["ence"], size=[100], n_bins=[2], nu=[6], n_mc=20)
    return [
        # adversarial_groups: min_count 0 looped forever, sizes > M hung in the sampler
        ("adv min_count 0", lambda d: adv(d["ds"], min_count=0, n_groups=5, n_boot=40),
         r"^min_count: expected an integer >= 2"),
        ("adv min_count 1", lambda d: adv(d["ds"], min_count=1, n_groups=5, n_boot=40),
         r"^min_count: expected an integer >= 2"),
        ("adv min_count > M", lambda d: adv(d["ds"], min_count=1000, n_groups=5, n_boot=40),
         r"^min_count: no group size M/2"),
        ("adv sizes > M", lambda d: adv(d["ds"], sizes=[1000], n_groups=5, n_boot=40),
         r"^sizes: expected group sizes from 2 to M=300"),
        ("adv sizes 0", lambda d: adv(d["ds"], sizes=[0], n_groups=5, n_boot=40), r"^sizes: "),
        ("adv sizes float", lambda d: adv(d["ds"], sizes=[50.5], n_groups=5, n_boot=40),
         r"^sizes: "),
        ("adv sizes str", lambda d: adv(d["ds"], sizes="a", n_groups=5, n_boot=40), r"^sizes: "),
        ("adv sizes twice", lambda d: adv(d["ds"], sizes=[50, 50], n_groups=5, n_boot=40),
         r"^sizes: a group size is listed twice"),
        ("adv n_groups 0", lambda d: adv(d["ds"], min_count=50, n_groups=0, n_boot=40),
         r"^n_groups: expected an integer >= 1"),
        # local(bins=...): KeyError, IndexError, AttributeError
        ("local bins empty Dataset", lambda d: local.local(d["ds"], bins=xr.Dataset(), n_boot=40),
         r"^bins: expected the bins of ds"),
        ("local bins of other data", lambda d: local.local(
            d["ds"], bins=d["other"].uqcal.bins(n_bins=5), n_boot=40),
         r"^bins: the bins are of 500 points, but ds has 300"),
        ("local bins=3", lambda d: local.local(d["ds"], bins=3, n_boot=40), r"^bins: expected"),
        ("order_sensitivity binomial_noise 1", lambda d: local.order_sensitivity(
            d["ds"], by="X1", n_orders=2, n_bins=4, n_boot=40, binomial_noise=1),
         r"^binomial_noise: expected True or False"),
        # bins: KeyError of an unknown tie-breaking variable, unpacking of a bad grid
        ("bins tiebreak unknown", lambda d: d["ds"].uqcal.bins(by="B", n_bins=5,
                                                               tiebreak="foo"),
         r"^tiebreak: the tie-breaking variable 'foo' is not in the dataset"),
        ("bins tiebreak 3", lambda d: d["ds"].uqcal.bins(by="B", n_bins=5, tiebreak=3),
         r"^tiebreak: "),
        ("bins grid n_bins triple", lambda d: d["ds"].uqcal.bins(
            by=["uE", "X1"], binning="grid", n_bins=(2, 2, 2)),
         r"^n_bins: grid binning needs an integer or a pair"),
        ("bins min_count > M", lambda d: d["ds"].uqcal.bins(n_bins=5, min_count=1000),
         r"^min_count: min_count=1000 is larger than the number of points"),
        # cube queried outside its grid or with a non-cube: KeyError, TypeError
        ("reference_for generator not in cube", lambda d: cube.reference_for(
            small, size=100, n_bins=2, generator="laplace", nu=6),
         r"^generator: laplace is not in the cube \(generators: normal, t6\)"),
        ("reference_for nu not in cube", lambda d: cube.reference_for(
            small, size=100, n_bins=2, generator="normal", nu=3),
         r"^nu: 3 is not in the cube \(nu: 6\)"),
        ("reference_for size outside", lambda d: cube.reference_for(
            small, size=1000, n_bins=2, generator="normal", nu=6),
         r"^size, n_bins: sqrt\(n_bins / size\) = 0.04472 is outside the cube's range"),
        ("reference_for size str", lambda d: cube.reference_for(
            small, size="100", n_bins=2, generator="normal"), r"^size: expected an integer"),
        ("reference_for not a cube", lambda d: cube.reference_for(
            d["ds"], size=100, n_bins=2, generator="normal"), r"^cube: expected a cube"),
        ("fit_sqrt one cell size", lambda d: cube.fit_sqrt(one_x),
         r"^cube: fitting mean = a \+ alpha sqrt\(n_bins / size\) needs"),
        ("fit_sqrt over unknown", lambda d: cube.fit_sqrt(small, over=["foo"]), r"^over: "),
        ("size_bins_study one cell", lambda d: studies.size_bins_study(
            ["ence"], size=[100], n_bins=[5], nu=[6], n_mc=10),
         r"^size, n_bins: the fit of mean = a \+ alpha sqrt\(n_bins / size\) needs"),
        ("build_from empty mapping", lambda d: cube.build_from({}, ["ence"], n_bins=[5]),
         r"^datasets: the mapping of data sets is empty"),
        ("build_from value not a Dataset", lambda d: cube.build_from({"a": 3}, ["ence"]),
         r"^datasets: 'a' is a int, not an xarray.Dataset"),
        # interval helpers: IndexError, 'Mean of empty slice', NaN Student/Wilson bounds
        ("percentile no replicate", lambda d: intervals.percentile_interval(np.empty((1, 0))),
         r"^replicates: expected at least one replicate"),
        ("bca no replicate", lambda d: xuqcal.bca_interval(np.empty((1, 0)), np.zeros(1),
                                                           np.ones((1, 3))),
         r"^replicates: expected at least one replicate"),
        ("bca estimate shape", lambda d: xuqcal.bca_interval(np.ones((2, 9)), np.zeros(1),
                                                             np.ones((2, 3))),
         r"^estimate: expected one estimate per interval, shape \(2,\)"),
        ("bca one jackknife value", lambda d: xuqcal.bca_interval(np.ones((1, 9)), np.zeros(1),
                                                                  np.empty((1, 0))),
         r"^jackknife: expected at least 2 leave-one-out values"),
        ("bca text", lambda d: xuqcal.bca_interval("a", 0.0, np.ones(3)), r"^replicates: "),
        ("student one value", lambda d: xuqcal.student_interval(np.array([1.0])),
         r"^values: the Student interval needs at least 2 values"),
        ("student NaN", lambda d: xuqcal.student_interval(np.array([1.0, np.nan, 2.0])),
         r"^values: 1 of 3 values are NaN or infinite"),
        ("wilson NaN", lambda d: xuqcal.wilson_interval(math.nan, 10),
         r"^successes, trials: expected finite counts"),
        ("wilson k > n", lambda d: xuqcal.wilson_interval(5, 3),
         r"^successes, trials: expected 0 <= successes <= trials and trials > 0, got "
         r"successes=5, trials=3"),
        ("generator sample -1", lambda d: xuqcal.get_generator("normal").sample(-1, seed=0),
         r"^size: expected an integer >= 0"),
        ("generator sample seed", lambda d: xuqcal.get_generator("t6").sample(3, seed=-1),
         r"^seed: expected an integer from 0"),
        # strings where numbers are expected: NumPy's 'could not convert string to float'
        ("confidence_curve k text", lambda d: curves.confidence_curve(d["ds"], k="a"),
         r"^k: expected a sequence of percents \(numbers\), got 'a'"),
        ("calibration_curve p mixed", lambda d: curves.calibration_curve(
            d["ds"], coverage_levels=[0.5, "x"]),
         r"^coverage_levels: expected a sequence of coverage levels"),
        # other messages that did not name the parameter
        ("scores n_boot 2", lambda d: xuqcal.recalibration.scores(d["ds"], features=(),
                                                                 n_bins=5, n_boot=2),
         r"^n_boot: expected an integer >= 40"),
        ("scores zero E", lambda d: xuqcal.recalibration.scores(
            d["ds"].assign(E=d["ds"].E * 0), features=(), n_bins=5, n_boot=40),
         r"^E: every error is zero: the scores ln <Z²> \(S_cal, S_x\) are undefined"),
        ("from_dataframe features=3", lambda d: xuqcal.from_dataframe(
            d["ds"][["E", "uE"]].to_dataframe(), E="E", uE="uE", features=3),
         r"^features: expected a variable name or a list of names, got 3"),
        ("validate_dataset features=3", lambda d: xuqcal.validate_dataset(d["ds"], features=3),
         r"^features: expected a variable name"),
        ("bootstrap level 1 - 1e-16", lambda d: xuqcal.bootstrap(d["ds"], level=1 - 1e-16,
                                                                 n_boot=100),
         r"^n_boot: .*an interval at level 0.9999999999999999 needs"),
        # meaningless settings that were accepted (found through the command line)
        ("recalibration by E", lambda d: xuqcal.recalibration.fit(d["ds"], by="E"),
         r"^by: the errors 'E' cannot be a binning variable"),
        ("recalibration grid by E", lambda d: xuqcal.recalibration.fit(d["ds"], by=("uE", "E")),
         r"^by: the errors 'E' cannot be a binning variable"),
        ("evaluate n_mc_fv 1", lambda d: xuqcal.recalibration.evaluate(
            {"train": d["ds"]}, features=(), n_mc_fv=1),
         r"^n_mc_fv: expected 0 \(no simulated f_v\) or at least 2"),
    ]


@pytest.mark.parametrize(("case", "call", "message"), _cases_api_hangs_and_tracebacks(),
                         ids=[c[0] for c in _cases_api_hangs_and_tracebacks()])
def test_api_hangs_and_tracebacks_are_named_errors(case, call, message):
    data = _api_data()
    with pytest.raises(ValueError, match=message):
        _within(20, lambda: call(data))


def _cases_api_bad_data():
    """Data every function must refuse, naming the variable: values that are not real
    numbers (silently converted before: a bool E gave zms 0.5, dates zms 2.6e30, complex a
    NumPy ComplexWarning), a binning variable with NaN/inf (silently binned), a NaN of E alone
    in one slice of data with an extra dimension (named with the slice's label and row;
    before issue 13 extra dimensions were refused), empty data."""
    local, curves = xuqcal.analysis.local, xuqcal.curves
    functions = {
        "stats": lambda d: xuqcal.stats(d, ["zms", "ence"], n_bins=5).compute(),
        "bootstrap": lambda d: xuqcal.bootstrap(d, ["zms"], n_boot=40).compute(),
        "reference": lambda d: xuqcal.simulate(d, ["cc"], n_mc=10).compute(),
        "validate": lambda d: xuqcal.validate(d, ["zms"], n_boot=40, n_mc=10, n_bins=5),
        "describe": lambda d: xuqcal.describe(d),
        "local": lambda d: local.local(d, n_bins=5, n_boot=40),
        "reliability": lambda d: local.reliability(d, n_bins=5, n_boot=40),
        "confidence_curve": lambda d: curves.confidence_curve(d, n_mc=5),
    }
    cases = []
    for name, call in functions.items():
        cases += [
            (f"{name} bool E", call, "bool_e", r"^E: .*(does not hold real numbers|not numeric)"
                                                r" \(dtype bool\)"),
            (f"{name} datetime E", call, "date_e", r"^E: .*\(dtype datetime64"),
            (f"{name} complex E", call, "complex_e", r"^E: .*\(dtype complex128\)"),
            (f"{name} text E", call, "text_e", r"^E: .*\(dtype <U1\)"),
            (f"{name} two-dimensional", call, "two_d",
             r"^model=1: E: 1 of 50 values are NaN \(rows? 4\)"),
            (f"{name} empty", call, "empty", r"^(ds|statistics): .*(empty|needs at least)"),
        ]
    binned = {
        "stats": lambda d: xuqcal.stats(d, ["ence"], n_bins=5, by="X1").compute(),
        "bootstrap": lambda d: xuqcal.bootstrap(d, ["ence"], n_boot=40, n_bins=5,
                                                by="X1").compute(),
        "reference": lambda d: xuqcal.simulate(d, ["ence"], n_mc=10, n_bins=5,
                                                by="X1").compute(),
        "validate": lambda d: xuqcal.validate(d, ["ence"], n_boot=40, n_mc=10, n_bins=5,
                                              by="X1"),
    }
    for name, call in binned.items():
        cases += [(f"{name} by with NaN", call, "nan_x",
                   r"^by: the binning variable 'X1' has 250 of 300 values NaN or infinite"),
                  (f"{name} by with inf", call, "inf_x",
                   r"^by: the binning variable 'X1' has 50 of 300 values NaN or infinite")]
    cases.append(("order_sensitivity by with NaN", lambda d: local.order_sensitivity(
        d, by="X1", n_orders=2, n_bins=5, n_boot=40), "nan_x",
        r"^X1: 250 of 300 values are NaN or infinite \(rows \d+, \d+, \d+, \d+, \d+, \.\.\.\)$"))
    return cases


@pytest.mark.parametrize(("case", "call", "which", "message"), _cases_api_bad_data(),
                         ids=[c[0] for c in _cases_api_bad_data()])
def test_api_bad_data_are_named_errors(case, call, which, message):
    data = _api_data()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no ComplexWarning or other NumPy warning first
        with pytest.raises(ValueError, match=message):
            call(data[which])


def _cases_api_undefined():
    """NaN results that were silent (or came with NumPy's RuntimeWarning or a
    ZeroDivisionError): now NaN with an UndefinedStatisticWarning naming them."""
    local, curves = xuqcal.analysis.local, xuqcal.curves

    def constant_uE(d):
        return d.assign(uE=d.uE * 0 + 0.7)

    def constant_E(d):
        return d.assign(E=d.E * 0 + 0.3)

    return [
        ("describe constant E", lambda d: xuqcal.describe(constant_E(d)),
         ["relative_bias", "beta_gm", "kappa_cs", "nu_eff", "t_loc", "t_scale"],
         r"relative_bias, beta_gm, kappa_cs, nu_eff, t_loc, t_scale of E are undefined: E is "
         r"constant"),
        ("describe zero E", lambda d: xuqcal.describe(d.assign(E=d.E * 0)),
         ["relative_bias", "nu_eff"], r"of E are undefined: E is constant"),
        ("describe constant uE", lambda d: xuqcal.describe(constant_uE(d)),
         ["uE2_shape", "uE2_scale", "beta_gm_uE"],
         r"uE2_shape, uE2_scale, beta_gm_uE of uE are undefined: uE is constant"),
        ("reference constant uE", lambda d: xuqcal.simulate(constant_uE(d), ["cc", "ence"],
                                                             n_mc=20, n_bins=5).compute(),
         ["mean"], r"cc reference is undefined: the statistic is NaN or infinite on 20 of 20"),
        ("reference mse beyond float64", lambda d: xuqcal.simulate(
            d.assign(E=d.E * 1e200, uE=d.uE * 1e200), ["mse", "zms"], n_mc=20).compute(),
         ["mean"], r"mse reference is undefined"),
        ("local constant values", lambda d: local.local(constant_E(constant_uE(d)), "rce",
                                                        n_bins=5, n_boot=40),
         ["acf"], r"acf is undefined: the per-bin values are all equal"),
        ("calibration curve one level",
         lambda d: curves.calibration_curve(d, coverage_levels=[0.5]),
         ["miscalibration_area"], r"miscalibration_area is undefined: it needs at least 2"),
        ("cube of a data set with constant uE", lambda d: cube.build_from(
            {"a": constant_uE(d)}, ["cc", "ence"], n_bins=[5], n_mc=10).compute(),
         ["mean"], r"cc reference is undefined in 1 cell\(s\) of the cube"),
        ("generator study of constant uE", lambda d: studies.generator_sensitivity_study(
            constant_uE(d), nu=[6], statistics=["cc", "ence"], n_mc=10, n_bins=5),
         ["mean", "difference"], r"cc reference is undefined"),
    ]


@pytest.mark.parametrize(("case", "call", "variables", "message"), _cases_api_undefined(),
                         ids=[c[0] for c in _cases_api_undefined()])
def test_api_undefined_results_are_named(data, case, call, variables, message):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = call(data)
    named = [str(w.message) for w in caught if w.category is UndefinedStatisticWarning]
    assert any(re.search(message, m) for m in named), named
    assert all(w.category.__module__.startswith("xuqcal") for w in caught), \
        [(w.category, str(w.message)) for w in caught]
    for name in variables:
        assert not np.isfinite(result[name].values).all(), name


def test_api_renamed_variables_with_default_by(data):
    """by="uE" stands for the uncertainty variable whatever its name: local and reliability
    refused E="err", uE="sigma" ('the binning variable uE is not in the dataset')."""
    renamed = data.rename({"E": "err", "uE": "sigma"})
    names = {"E": "err", "uE": "sigma"}
    a = xuqcal.local(data, n_bins=5, n_boot=40)
    b = xuqcal.local(renamed, n_bins=5, n_boot=40, **names)
    np.testing.assert_array_equal(a.ci_low.values, b.ci_low.values)
    a = xuqcal.reliability(data, n_bins=5, n_boot=40)
    b = xuqcal.reliability(renamed, n_bins=5, n_boot=40, **names)
    np.testing.assert_array_equal(a.rmse_high.values, b.rmse_high.values)
    # without names, a hand-made set (no recorded roles; a set built by xuqcal keeps them)
    hand_made = xr.Dataset({name: ("sample", renamed[name].values) for name in ("err", "sigma")})
    with pytest.raises(ValueError, match=r"^E: the dataset has no variable 'E'"):
        xuqcal.describe(hand_made)


@pytest.mark.parametrize("k", [-150, -100, -20, 20, 100, 150])
def test_api_scale_free_analyses(data, k):
    """E, uE × 10^k changes no scale-free result of the analyses beyond rounding. Tolerances:
    1e-12 relative for results computed from z-scores (each z carries ~3 ulp of rounding,
    sums of 300 terms ~300 ulp ≈ 7e-14); the maximum-likelihood shape of uE² comes from an
    optimiser (scipy's default tolerances, ~1e-5 relative between starting points), so 1e-4:
    it was 1.5 instead of 2.93 at uE ~ 1e-100 and 0.02 at uE ~ 1e20."""
    scaled = data.assign(E=data.E * 10.0**k, uE=data.uE * 10.0**k)
    for statistic in ("zms", "rce", "zm"):
        a = xuqcal.local(data, statistic, n_bins=5, n_boot=40)
        b = xuqcal.local(scaled, statistic, n_bins=5, n_boot=40)
        for name in ("value", "ci_low", "ci_high", "fraction_valid"):
            np.testing.assert_allclose(b[name].values, a[name].values, rtol=1e-12, atol=1e-12)
    for name, call in (("observed", lambda d: xuqcal.curves.calibration_curve(d)),
                       ("fraction_valid", lambda d: xuqcal.adversarial_groups(
                           d, min_count=100, n_groups=5, n_boot=40)),
                       ("s_x", lambda d: xuqcal.recalibration.scores(d, features=(), n_bins=5,
                                                                     n_boot=40))):
        np.testing.assert_allclose(call(scaled)[name].values, call(data)[name].values,
                                   rtol=1e-12, atol=1e-12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedStatisticWarning)  # uE2_scale beyond float64
        a, b = xuqcal.describe(data), xuqcal.describe(scaled)
    assert float(b.uE2_shape) == pytest.approx(float(a.uE2_shape), rel=1e-4)
    np.testing.assert_allclose(b.relative_bias.values, a.relative_bias.values, rtol=1e-12)


def _cases_plot_wrong_input():
    """Each figure given another function's output (or a number) raised AttributeError or
    KeyError from inside its drawing code: now a ValueError naming the argument and the
    producer it expects."""
    plot = xuqcal.plot
    cases = [(name, getattr(plot, name), "result", producer) for name, producer in (
        ("zeta", "xuqcal.validate"), ("local", "xuqcal.local"),
        ("acf", "xuqcal.local"), ("reliability", "xuqcal.reliability"),
        ("order_sensitivity", "xuqcal.order_sensitivity"),
        ("adversarial", "xuqcal.adversarial_groups"),
        ("ablation", "xuqcal.curves.ablation"),
        ("calibration_curve", "xuqcal.curves.calibration_curve"),
        ("local_coverage", "xuqcal.curves.local_coverage"),
        ("recalibration_scan", "xuqcal.recalibration.scan"),
        ("validation_probability", "xuqcal.studies.validation_probability"),
        ("generator_sensitivity_study", "xuqcal.studies.generator_sensitivity_study"),
        ("size_bins_study", "xuqcal.studies.size_bins_study"),
        ("zero_bins_extrapolation", "xuqcal.studies.zero_bins_extrapolation"))]
    cases += [("confidence_curve", plot.confidence_curve, "curve",
               "xuqcal.curves.confidence_curve"),
              ("fraction_valid", plot.fraction_valid, "results", "xuqcal.local")]
    return cases


@pytest.mark.parametrize(("name", "function", "argument", "producer"),
                         _cases_plot_wrong_input(), ids=[c[0] for c in _cases_plot_wrong_input()])
@pytest.mark.parametrize("given", ["data set", "number"])
def test_plot_wrong_input_is_a_named_error(data, name, function, argument, producer, given):
    wrong = data if given == "data set" else 3
    with pytest.raises(ValueError, match=rf"^{argument}: expected the output of "
                                         rf"{re.escape(producer)}"):
        function(wrong)


@pytest.mark.parametrize(("n_sets", "bins", "message"), [
    (0, 80, r"^n_sets: expected an integer >= 1"), (2, 0, r"^bins: expected an integer >= 1"),
    (2.5, 80, r"^n_sets: "), (2, "auto", r"^bins: ")])
def test_plot_error_distribution_arguments(data, n_sets, bins, message):
    with pytest.raises(ValueError, match=message):
        xuqcal.plot.error_distribution(data, n_sets=n_sets, bins=bins)


@pytest.mark.parametrize("call", [
    lambda d: xuqcal.stats(d, ["zms", "ence"], n_bins=5).compute(),
    lambda d: xuqcal.bootstrap(d, ["zms"], n_boot=40).compute(),
    lambda d: xuqcal.simulate(d, ["cc"], n_mc=10).compute(),
    lambda d: xuqcal.validate(d, ["zms", "cc"], n_boot=40, n_mc=10).compute(),
    lambda d: xuqcal.describe(d).compute(),
    lambda d: xuqcal.local(d, n_bins=5, n_boot=40).compute(),
    lambda d: xuqcal.curves.confidence_curve(d, n_mc=5).compute(),
    lambda d: xuqcal.validate_dataset(d).compute(),
], ids=["stats", "bootstrap", "simulate", "validate", "describe", "local", "confidence_curve",
        "validate_dataset"])
@pytest.mark.parametrize(("bad", "message"), [
    ("nan E", r"^E: 1 of 300 values are NaN"), ("negative uE", r"^uE: 1 of 300 values are not "
                                                               r"positive"),
    ("overflowing z", r"E, uE: 1 of 300 z-scores E/uE overflow")])
def test_dask_bad_values_inside_the_graph(data, call, bad, message):
    """Bad values inside a Dask graph: the same clear error, raised when computed (not a
    traceback from the kernels, not a NaN result)."""
    lazy = data.chunk({"sample": 100})
    row = lazy.sample == 7
    if bad == "nan E":
        lazy = lazy.assign(E=lazy.E.where(~row))
    elif bad == "negative uE":
        lazy = lazy.assign(uE=lazy.uE.where(~row, -1.0))
    else:
        lazy = lazy.assign(E=lazy.E.where(~row, 1e300), uE=lazy.uE.where(~row, 1e-10))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # no NumPy overflow warning first
        with pytest.raises(ValueError, match=message):
            call(lazy)


def _cases_parameter_types():
    """Wrong types and sizes tried for every parameter of every entry point (~2500 calls):
    these ended in a raw TypeError/OverflowError/'Maximum allowed dimension exceeded', named
    another parameter, or were accepted."""
    local, curves, recalibration = xuqcal.analysis.local, xuqcal.curves, xuqcal.recalibration
    huge = 10**30
    cases = []
    for name, call in (("stats", lambda d, u: xuqcal.stats(d, ["ence"], n_bins=5, uE=u)),
                       ("bootstrap", lambda d, u: xuqcal.bootstrap(d, ["ence"], n_boot=40, n_bins=5,
                                                                   uE=u)),
                       ("reference", lambda d, u: xuqcal.simulate(d, ["ence"], n_mc=5, n_bins=5,
                                                                   uE=u)),
                       ("validate", lambda d, u: xuqcal.validate(d, ["ence"], n_boot=40,
                                                                 n_mc=5, n_bins=5, uE=u))):
        for value in (None, 3, ["uE"], "sigma"):  # named by, not uE, before
            cases.append((f"{name} uE={value!r}", lambda d, c=call, v=value: c(d, v), r"^uE: "))
    cases += [
        ("bootstrap n huge", lambda d: xuqcal.bootstrap(d, n_boot=huge),
         r"^n_boot: expected an integer <= 2\*\*40"),
        ("simulate n_mc huge", lambda d: xuqcal.simulate(d, n_mc=huge), r"^n_mc: .*<= 2\*\*40"),
        ("validate n_mc huge", lambda d: xuqcal.validate(d, n_mc=huge), r"^n_mc: .*<= 2\*\*40"),
        ("bootstrap unused n_bins huge", lambda d: xuqcal.bootstrap(
            d, ["zms"], n_boot=40, n_bins=2**40).compute(), None),
        ("cube size huge", lambda d: cube.build(["ence"], size=[huge], n_bins=[2], nu=[6]),
         r"^size: expected integers <= 2\*\*40"),
        ("validation_probability size huge", lambda d: studies.validation_probability(
            [6], size=[huge], n_mc=2, n_boot=40), r"^size: "),
        ("validation_probability keep_trials", lambda d: studies.validation_probability(
            [6], size=[50], n_mc=2, n_boot=40, keep_trials="no"), r"^keep_trials: expected"),
        ("generator_sensitivity_study nu huge", lambda d: studies.generator_sensitivity_study(
            d, nu=[1e30], n_mc=5, n_bins=5), r"^nu: expected ν from 2 to 1e6"),
        ("nig uE_scale huge int", lambda d: xuqcal.synthetic.nig(10, nu=6, seed=0,
                                                                 uE_scale=huge), None),
        ("nig replicate 2**64 - 1", lambda d: xuqcal.synthetic.nig(10, nu=6, seed=0,
                                                                   replicate=2**64 - 1), None),
        # None is the default: the recommended number of bins for the points
        ("ablation n_bins None", lambda d: curves.ablation(d, statistics=["zms", "ence"],
                                                           n_boot=40, n_bins=None), None),
        ("ablation n_bins nan", lambda d: curves.ablation(d, n_boot=40, n_bins=math.nan),
         r"^n_bins: "),
        ("scan n_bins 5", lambda d: recalibration.scan(d, d, n_bins=5, n_boot=40, features=()),
         r"^n_bins: expected a sequence of numbers of bins"),
        ("zero_bins E list", lambda d: studies.zero_bins_extrapolation(d, E=["E"]),
         r"^E: expected the name of a variable"),
        ("build_from uE dict", lambda d: cube.build_from({"a": d}, ["ence"], uE={"a": 1}),
         r"^uE: expected the name of a variable"),
        ("fit_sqrt None", lambda d: cube.fit_sqrt(None), r"^cube: expected a cube"),
        ("local by None", lambda d: local.local(d, by=None, n_boot=40), r"^by: expected the name"),
        ("reliability by 1.5", lambda d: local.reliability(d, by=1.5, n_boot=40), r"^by: "),
        ("bins by []", lambda d: d.uqcal.bins(by=[]), r"^by: "),
    ]
    return cases


@pytest.mark.parametrize(("case", "call", "message"), _cases_parameter_types(),
                         ids=[c[0] for c in _cases_parameter_types()])
def test_parameter_types_and_sizes(data, case, call, message):
    """A ValueError (or TypeError, for a wrong type of ds) led by the parameter's name, or a
    finite result where the value is legitimate (None in the table)."""
    if message is None:
        result = _within(20, lambda: call(data))
        values = [v.values for v in result.data_vars.values() if v.dtype.kind == "f"]
        assert all(np.isfinite(v).all() for v in values)
        return
    with pytest.raises((ValueError, TypeError), match=message):
        _within(20, lambda: call(data))


def test_zero_bins_of_constant_data_name_the_infinite_zeta(data):
    """Constant E and uE: every binned value is the same, the fit is exact and its interval
    has zero width; zeta is infinite with a DegenerateIntervalWarning (it was silent)."""
    constant = data.assign(E=data.E * 0 + 0.5, uE=data.uE * 0 + 1.0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = studies.zero_bins_extrapolation(constant, n_bins=[2, 3, 4, 5], min_points=10,
                                                 fit_above=1)
    assert sorted(str(w.message).split(":")[0] for w in caught
                  if w.category is DegenerateIntervalWarning) == ["ence", "zmse"]
    assert np.isinf(result.zeta.values).all()
