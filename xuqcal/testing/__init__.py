"""Public test helpers (assertions and hypothesis strategies); see :mod:`xuqcal.testing`."""
