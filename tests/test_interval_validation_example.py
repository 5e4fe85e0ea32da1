"""The interval-validation example (issue 15): ZMS against PICP(0.95), with heavy-tail screening
by β_GM(Z²), on the nine shared sets (``examples/interval_validation.py``).

The NetCDF written by a ``--quick`` run is checked against xuqcal on the shared data: the
estimates and β_GM(Z²) (they do not depend on the replicate counts) against ``xuqcal.stats``
and a direct count, the verdicts with and without screening against ``xuqcal.validate`` called
with the run's own counts. The table of ``docs/guide/validation.rst`` (the output of the
full-size run) is checked against ``xuqcal.validate``, so that it cannot go stale. Needs the
shared data: skipped without it, failing under CI (``CI`` set), as ``require_shared_data``.
About 15 s.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from scipy import stats as sps

import xuqcal
from xuqcal.analysis.validation import NOT_TESTABLE_PREFIX, robust_skewness_z2

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "interval_validation.py"
DOCS = ROOT / "docs" / "guide" / "validation.rst"
STATISTICS = ["zms", "picp68.3", "picp95", "picpt95"]
THRESHOLD = 0.85
TOL = 0.005
#: M of the nine shared sets (../shared/data/README.md).
SIZES = {1: 2040, 2: 3834, 3: 2040, 4: 3836, 5: 2040, 6: 3818, 7: 13885, 8: 5000, 9: 5000}
#: The counts of the run that produced the table of the docs (the script's defaults; its n_mc,
#: explicit since validate defaults to "auto", issue 26: nothing is simulated).
DOCS_N_BOOT, DOCS_N_MC, DOCS_SEED = 10_000, 10_000, 0
DOCS_SECTION = "ZMS and PICP on the shared sets"


def short(verdict) -> str:
    """A verdict as the script's table prints it."""
    text = str(verdict)
    if text.startswith(NOT_TESTABLE_PREFIX):
        return "not testable"
    return "undecided" if text.startswith("undecided") else text


def number(label) -> int:
    """The shared set number of a ``dataset`` label (``"6 Perovskite_GPR"`` -> 6)."""
    return int(str(label).split()[0])


@pytest.fixture(scope="module")
def quick(shared_data, tmp_path_factory):
    """The NetCDF result and the printed output of one ``--quick`` run (against the xuqcal
    of this repository)."""
    folder = tmp_path_factory.mktemp("interval_validation")
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--output", str(folder)],
        capture_output=True, text=True, timeout=300, cwd=ROOT,
        env={**os.environ, "MPLBACKEND": "Agg", "XUQCAL_SHARED_DATA": str(shared_data),
             "PYTHONPATH": path})
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    with xr.open_dataset(folder / "interval_validation.nc") as r:
        return r.load(), done.stdout


def test_nine_sets_over_dataset_and_statistic(quick):
    r, stdout = quick
    assert [number(label) for label in r.dataset.values] == list(SIZES)
    assert r.statistic.values.tolist() == STATISTICS
    assert r["size"].values.tolist() == list(SIZES.values())
    for name in ("estimate", "ci_low", "ci_high", "zeta", "verdict", "verdict_unscreened"):
        assert r[name].dims == ("dataset", "statistic"), name
    assert r.beta_gm_z2.dims == ("dataset",) and r.heavy_tails.dims == ("dataset",)
    assert r.attrs["n_boot"] == 200 and r.attrs["seed"] == 0
    assert r.attrs["heavy_tail_threshold"] == THRESHOLD
    assert r.attrs["coverage_tolerance"] == TOL
    # the printed table has one row per set, and the summary counts the sets
    assert sum(line.startswith(tuple(f"{k} " for k in SIZES)) for line in
               stdout.splitlines()) == 2 * len(SIZES)  # the two tables
    assert "ZMS validates" in stdout and "PICP(0.95) validates" in stdout


def test_estimates_equal_stats(quick, load_set):
    """The estimates are those of ``xuqcal.stats`` bit for bit, and PICP(0.95) is the fraction
    of |Z| <= Φ⁻¹(0.975), counted directly."""
    r, _ = quick
    k95 = float(sps.norm.ppf(0.975))
    for label in r.dataset.values:
        ds = load_set(number(label))
        estimate = r.estimate.sel(dataset=label)
        keys = ["zms", "picp68.3", "picp95"]
        expected = xuqcal.stats(ds, keys).values
        assert (estimate.sel(statistic=keys).values == expected).all(), label
        assert float(estimate.sel(statistic="picp95")) == \
            float(xuqcal.stats(ds, ["picp95"]).values[0]), label
        z = ds.E.values / ds.uE.values
        covered = int(np.count_nonzero(np.abs(z) <= k95))
        assert round(float(estimate.sel(statistic="picp95")) * z.size) == covered, label
        # the Student factor is defined for a fitted ν > 2 only (set 6: ν = 1.41, NaN)
        t95 = r.sel(dataset=label, statistic="picpt95")
        if float(t95.nu_fitted) > 2.0:
            assert float(t95.estimate) == float(xuqcal.stats(ds, ["picpt95"]).values[0])
        else:
            assert np.isnan(float(t95.estimate)) and np.isnan(float(t95.coverage_factor))
        assert float(r.beta_gm_z2.sel(dataset=label)) == robust_skewness_z2(ds.E.values,
                                                                            ds.uE.values)


def test_heavy_tail_screening(quick, load_set):
    """Above β_GM(Z²) = 0.85 (set 6 only) ZMS and every PICP are *not testable* exactly when
    screening is on; elsewhere screening changes nothing. Both verdicts are those of
    ``xuqcal.validate`` with the run's counts."""
    r, _ = quick
    heavy = r.beta_gm_z2.values > THRESHOLD
    assert r.heavy_tails.values.tolist() == heavy.tolist()
    assert [number(label) for label in r.dataset.values[heavy]] == [6]
    for label, is_heavy in zip(r.dataset.values, heavy, strict=True):
        screened = r.verdict.sel(dataset=label).values
        unscreened = r.verdict_unscreened.sel(dataset=label).values
        beta = float(r.beta_gm_z2.sel(dataset=label))
        for key, verdict, plain in zip(STATISTICS, screened, unscreened, strict=True):
            assert str(verdict).startswith(NOT_TESTABLE_PREFIX) == bool(is_heavy), (label, key)
            assert not str(plain).startswith(NOT_TESTABLE_PREFIX), (label, key)
            if is_heavy:
                assert verdict == f"not testable: heavy tails (β_GM(Z²) = {beta:.3f} > 0.85)"
            else:
                assert verdict == plain, (label, key)
        assert set(unscreened[:3]) <= {"pass", "fail"}, label  # zms, picp68.3, picp95
        ds = load_set(number(label))
        for threshold, variable in ((THRESHOLD, "verdict"), (None, "verdict_unscreened")):
            v = xuqcal.validate(ds, STATISTICS, n_boot=r.attrs["n_boot"], n_mc=DOCS_N_MC,
                                seed=r.attrs["seed"], heavy_tail_threshold=threshold, tol=TOL)
            assert v.verdict.values.tolist() == r[variable].sel(dataset=label).values.tolist()
            np.testing.assert_array_equal(v.zeta.sel(scheme="BS").values,
                                          r.zeta.sel(dataset=label).values)
            for name in ("estimate", "ci_low", "ci_high"):
                np.testing.assert_array_equal(v[name].values, r[name].sel(dataset=label).values)


# ------------------------------------------------------------------------------------------
# The table of docs/guide/validation.rst
# ------------------------------------------------------------------------------------------


def docs_section() -> str:
    text = DOCS.read_text(encoding="utf-8")
    start = text.index(f"\n{DOCS_SECTION}\n")
    following = re.search(r"\n[^\n]+\n-{3,}\n", text[start + len(DOCS_SECTION) + 2:])
    return text[start:start + len(DOCS_SECTION) + 2 + following.start()] if following \
        else text[start:]


def docs_rows() -> dict[int, list[str]]:
    """The rows of the docs table by set: set, M, β_GM(Z²), ZMS, ZMS interval, ζ_ZMS, ZMS
    verdict, unscreened, PICP95, PICP95 interval, ζ_PICP95, PICP95 verdict, unscreened."""
    rows = {}
    for line in docs_section().splitlines():
        if re.match(r"    \d \S+\s{2,}\d", line):
            cells = re.split(r"\s{2,}", line.strip())
            assert len(cells) == 13, cells
            rows[number(cells[0])] = cells
    return rows


def test_docs_table_lists_the_nine_sets():
    section = docs_section()
    assert "python examples/interval_validation.py" in section
    assert f"ZMS (BCa, {DOCS_N_BOOT} replicates, 95 %)" in section
    rows = docs_rows()
    assert list(rows) == list(SIZES)
    assert [int(row[1]) for row in rows.values()] == list(SIZES.values())
    # the summary lines count the verdicts of the table
    for columns, line in (((6, 11), "With heavy-tail screening"), ((7, 12), "Without screening")):
        summary = next(s for s in section.splitlines() if s.strip().startswith(line))
        for column, name in zip(columns, ("ZMS", r"PICP\(0\.95\)"), strict=True):
            passed = sum(row[column] == "pass" for row in rows.values())
            assert re.search(rf"{name} validates {passed} of 9 sets", summary), (line, name)


def test_docs_table_matches_validate(load_set):
    """β_GM(Z²), the PICP(0.95) columns and the ZMS estimate of the docs table do not depend on
    the replicate counts; they are those of ``xuqcal.validate`` as printed."""
    for k, row in docs_rows().items():
        ds = load_set(k)
        assert int(row[1]) == ds.sizes["sample"], k
        v = xuqcal.validate(ds, ["picp95"], n_boot=DOCS_N_BOOT, n_mc=DOCS_N_MC, seed=DOCS_SEED,
                            tol=TOL)
        u = xuqcal.validate(ds, ["picp95"], n_boot=DOCS_N_BOOT, n_mc=DOCS_N_MC,
                            heavy_tail_threshold=None, tol=TOL)
        assert v.attrs["n_boot"] == 0  # PICP alone: nothing is bootstrapped
        picp = v.isel(statistic=0)
        assert row[2] == f"{float(v.beta_gm_z2):.3f}", k
        assert row[8:11] == [f"{float(picp.estimate):.4f}",
                             f"[{float(picp.ci_low):.4f}, {float(picp.ci_high):.4f}]",
                             f"{float(picp.zeta.sel(scheme='BS')):.2f}"], k
        assert row[11] == short(picp.verdict.values), k
        assert row[12] == short(u.verdict.values[0]), k
        assert row[3] == f"{float(xuqcal.stats(ds, ['zms']).values[0]):#.3g}", k


def test_docs_table_zms_at_full_size(load_set):
    """The ZMS interval, ζ and verdicts of the docs table: ``xuqcal.validate`` with the run's
    10 000 replicates and seed (one bootstrap per set and screening; a few seconds)."""
    for k, row in docs_rows().items():
        ds = load_set(k)
        zms = {threshold: xuqcal.validate(ds, ["zms"], n_boot=DOCS_N_BOOT, n_mc=DOCS_N_MC,
                                          seed=DOCS_SEED,
                                          heavy_tail_threshold=threshold).isel(statistic=0)
               for threshold in (THRESHOLD, None)}
        z = zms[THRESHOLD]
        assert row[3:6] == [f"{float(z.estimate):#.3g}",
                            f"[{float(z.ci_low):#.3g}, {float(z.ci_high):#.3g}]",
                            f"{float(z.zeta.sel(scheme='BS')):.2f}"], k
        assert row[6] == short(z.verdict.values), k
        assert row[7] == short(zms[None].verdict.values), k


def test_refuses_to_overwrite_without_the_option(tmp_path):
    """An existing file (here not a result of xuqcal) stops the script before any work."""
    existing = tmp_path / "interval_validation.nc"
    existing.write_text("not a result of xuqcal\n")
    done = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--output", str(tmp_path)],
                          capture_output=True, text=True, timeout=120, cwd=ROOT,
                          env={**os.environ, "MPLBACKEND": "Agg"})
    assert done.returncode != 0 and "--overwrite" in done.stderr, done.stderr[-2000:]
    assert existing.read_text() == "not a result of xuqcal\n"
    assert not (tmp_path / "interval_validation.png").exists()
