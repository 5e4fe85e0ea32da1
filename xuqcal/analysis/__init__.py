"""The lazy xarray layer: every analysis takes a Dataset over ``sample`` and returns a Dataset.

Arguments are checked once, before any computation; the kernels of :mod:`xuqcal.core` are
lifted with ``apply_ufunc``/``map_blocks``/``dask.delayed``; attributes are attached in one place.
"""
