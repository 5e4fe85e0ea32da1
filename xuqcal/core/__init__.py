"""NumPy/Numba layer: no labels, no xarray.

Counter-based random streams (:mod:`~xuqcal.core.random`), the statistic definitions
(:mod:`~xuqcal.core.statistics`), the kernels over one ``sample`` axis
(:mod:`~xuqcal.core.kernels`), intervals (:mod:`~xuqcal.core.intervals`), generators
(:mod:`~xuqcal.core.generators`) and argument checks (:mod:`~xuqcal.core.checks`).
"""
