"""Temperature scaling and bin-wise variance scaling (BVS): one factor per bin on ``uE``,
analytic (``sqrt(<Z²>_b)``, the NLL minimizer) or minimizing a score loss (see
:mod:`xuqcal.recalibration`)."""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import xarray as xr

from xuqcal._lazy import lazy_module
from xuqcal.core import defaults
from xuqcal.core.kernels import LOG_2PI
from xuqcal.core.statistics import STATISTICS, log_square
from xuqcal.recalibration.common import BINS_PREFIX, _learn_bins, _ScoreBins

optimize = lazy_module("scipy.optimize")

#: Factors are searched in [1/SCALE_BOUND, SCALE_BOUND] × the analytic start.
SCALE_BOUND = 10.0
LOCAL_MAXITER = 200
_SEARCH = ("scipy.optimize.direct (locally biased) over ln(s_b / s_analytic) in "
           "[-ln 10, ln 10], then L-BFGS-B (analytic gradient) within the same bounds; the "
           "analytic start is kept unless the optimum is strictly better")
_ZMS, _ZMSE = STATISTICS["zms"], STATISTICS["zmse"]


def _bin_zms(z2: np.ndarray, index: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``<Z²>`` of each of the ``n`` bins (``index``: the bin of every point) and the counts."""
    counts = np.bincount(index, minlength=n)
    return _ZMS.from_sums({"count": counts, "z2": np.bincount(index, weights=z2,
                                                              minlength=n)}), counts



@dataclass
class _Objective:
    """A score loss of the recalibrated training data as a function of ``θ = ln(s / s0)``."""

    E: np.ndarray
    uE: np.ndarray
    index: np.ndarray
    s0: np.ndarray
    free: np.ndarray
    loss: str
    features: Mapping[str, np.ndarray]
    n_bins_scores: int
    uE_name: str = defaults.UE
    nfev: int = 0
    z2: np.ndarray = field(init=False)
    bins: _ScoreBins | None = field(init=False)

    def __post_init__(self) -> None:
        self.z2 = (self.E / self.uE) ** 2
        self.bins = None
        if self.loss != "nll":
            feats = self.features if self.loss in ("s_tot", "s_ada") else {}
            self.bins = _ScoreBins(self.uE, feats, self.n_bins_scores, self.uE_name)
        self.lnu2 = float(np.mean(log_square(self.uE)))

    def scales(self, theta: np.ndarray) -> np.ndarray:
        s = self.s0.copy()
        s[self.free] = self.s0[self.free] * np.exp(theta)
        return s

    def value_grad(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        self.nfev += 1
        s = self.scales(np.asarray(theta, dtype=np.float64))
        f = s[self.index]
        w = self.z2 / (f * f)
        if self.loss == "nll":
            # the NLL ½ (<Z²> + <ln uE²> + ln 2π) of the recalibrated data, with
            # <ln (f uE)²> = <ln uE²> + <ln f²> (the first term fixed): not the finisher of
            # STATISTICS["nll"], whose two-term sum would round differently in the last bit
            value = 0.5 * (float(np.mean(w)) + self.lnu2 + float(np.mean(np.log(f * f)))
                           + LOG_2PI)
            grad = np.bincount(self.index, weights=1.0 - w, minlength=s.size) / w.size
            return value, grad[self.free]
        total = float(np.sum(w))
        ln_mean = math.log(float(_ZMS.from_sums({"count": w.size, "z2": total})))
        value = abs(ln_mean)  # S_cal (scalar math.log, as in scores)
        g = np.full(w.size, np.sign(ln_mean) / total)
        bins = self.bins
        n = bins.n_bins
        indexes = list(bins.index[1:])
        if self.loss in ("s_tot", "s_con"):
            order = np.argsort(self.uE * f, kind="stable")
            index_u = np.empty(w.size, dtype=np.int64)
            index_u[order] = bins.sorted_bin
            indexes.append(index_u)
        for index in indexes:
            sums = np.bincount(index, weights=w, minlength=n)
            value += float(_ZMSE.from_bin_sums({"count": bins.counts, "z2": sums}))  # S_x
            logs = np.log(sums / bins.counts)  # for the gradient of |ln <Z²>_b|
            g += (np.sign(logs) / sums)[index] / n
        grad = -2.0 * np.bincount(self.index, weights=g * w, minlength=s.size)
        return value, grad[self.free]

    def value(self, theta: np.ndarray) -> float:
        return self.value_grad(theta)[0]


def _minimize(objective: _Objective, maxfun: int | None) -> tuple[np.ndarray, dict[str, Any]]:
    """DIRECT then L-BFGS-B over θ; never worse than the analytic start θ = 0."""
    k = objective.free.size
    start = np.zeros(k)
    analytic = objective.value(start)
    info: dict[str, Any] = {"loss_analytic": analytic, "optimizer": _SEARCH,
                            "n_factors_optimized": k}
    if k == 0:
        info.update(loss_value=analytic, optimum="analytic start (nothing to optimize)",
                    nfev_direct=0, nfev_local=0, direct_maxfun=0)
        return start, info
    if maxfun is None:
        maxfun = max(500, 25 * (k + 1))
    bound = math.log(SCALE_BOUND)
    bounds = [(-bound, bound)] * k
    t0 = time.perf_counter()
    before = objective.nfev
    glob = optimize.direct(objective.value, bounds, maxfun=maxfun, maxiter=100_000,
                           locally_biased=True, vol_tol=0.0, len_tol=1e-8)
    nfev_direct = objective.nfev - before
    before = objective.nfev
    local_start = np.clip(np.asarray(glob.x, dtype=np.float64), -bound, bound)
    loc = optimize.minimize(objective.value_grad, local_start, jac=True, method="L-BFGS-B",
                            bounds=bounds, options={"maxiter": LOCAL_MAXITER})
    nfev_local = objective.nfev - before
    candidates = [("analytic start", start, analytic),
                  ("DIRECT", local_start, objective.value(local_start)),
                  ("L-BFGS-B", np.clip(loc.x, -bound, bound),
                   objective.value(np.clip(loc.x, -bound, bound)))]
    best = min(candidates[1:], key=lambda c: c[2])
    if not best[2] < analytic:
        best = candidates[0]
    info.update(loss_value=best[2], optimum=best[0], nfev_direct=nfev_direct,
                nfev_local=nfev_local, direct_maxfun=int(maxfun),
                local_maxiter=LOCAL_MAXITER, search_seconds=time.perf_counter() - t0)
    return best[1], info




def fit_scaling(ds: xr.Dataset, E: np.ndarray, uE: np.ndarray, *, method: str,
                names: tuple[str, ...], binning: str | None, n_bins: Any, loss: str,
                loss_features: tuple[str, ...], n_bins_scores: int, maxfun: int | None,
                attrs: dict[str, Any], uE_name: str = defaults.UE) -> xr.Dataset:
    """The temperature (one factor) or BVS (one factor per learned bin) recalibrator of the
    training errors ``E`` and uncertainties ``uE`` (``ds`` holds the binning variables and
    the features of the loss); see :func:`xuqcal.recalibration.fit`."""
    m = E.shape[0]
    z2 = (E / uE) ** 2
    global_zms, _ = _bin_zms(z2, np.zeros(m, dtype=np.int64), 1)
    global_scale = float(np.sqrt(global_zms[0]))
    if not global_scale > 0:
        raise ValueError("E: every training error is zero; no scaling factor can be fitted")
    if method == "temperature":
        index, n = np.zeros(m, dtype=np.int64), 1
        bins = None
    else:
        bins, index = _learn_bins(ds, names, binning, n_bins)
        n = bins.sizes["bin"]
    zms_b, counts = _bin_zms(z2, index, n)
    s0 = np.sqrt(zms_b)
    usable = (counts > 0) & (s0 > 0)
    s0 = np.where(usable, s0, global_scale)
    feats = {name: np.asarray(ds[name].values) for name in loss_features}
    objective = _Objective(E, uE, index, s0, np.flatnonzero(usable), loss, feats,
                           n_bins_scores, uE_name)
    if loss == "nll":
        theta = np.zeros(objective.free.size)
        value = objective.value(theta)
        info = {"loss_analytic": value, "loss_value": value, "optimum": "analytic",
                "n_factors_optimized": 0}
    else:
        theta, info = _minimize(objective, maxfun)
    scale = objective.scales(theta)
    attrs.update(global_scale=global_scale, **info)
    if method == "temperature":
        rec = xr.Dataset({"scale": ((), float(scale[0]), {
            "long_name": "factor applied to uE", "analytic": float(s0[0])})}, attrs=attrs)
        return rec
    data = {
        "scale": ("bin", scale, {"long_name": "factor applied to uE in the bin"}),
        "scale_analytic": ("bin", s0, {"long_name": "analytic factor sqrt(<Z²>_b) (the NLL "
                                                    "minimizer; global factor where none)"}),
        "train_count": ("bin", counts, {"long_name": "training points assigned to the bin "
                                                     "by the learned limits"}),
        "train_zms": ("bin", zms_b, {"long_name": "training <Z²> in the bin before "
                                                  "recalibration"}),
        "fallback": ("bin", (~usable).astype(np.int8), {
            "long_name": "1 where the bin has no usable training data and gets the global "
                         "(temperature) factor"}),
    }
    rec = xr.Dataset(data, coords={"bin": np.arange(n)}, attrs=attrs)
    rename = {v: BINS_PREFIX + str(v) for v in bins.variables if v not in bins.dims}
    prefixed = bins.rename(rename)
    rec = xr.merge([rec, prefixed], combine_attrs="override")
    rec.attrs = {**attrs, **{BINS_PREFIX + k: v for k, v in bins.attrs.items()}}
    if "bins_label" in rec.variables:
        rec = rec.set_coords("bins_label")
    return rec


