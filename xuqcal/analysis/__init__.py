"""The lazy xarray layer: every analysis takes a Dataset over ``sample`` and returns a Dataset.

Arguments are checked once, before any computation; the kernels of :mod:`xuqcal.core` are
lifted with ``apply_ufunc``/``map_blocks`` and the task helpers of :mod:`xuqcal.analysis.lazy`
(``delayed_call``, ``blocks_along``, ``part_of``); attributes are attached in one place.
"""
