"""Simulation studies: sensitivity cubes (:mod:`~xuqcal.studies.cube`) and the paper's studies
(:mod:`~xuqcal.studies.simulation`: validation probability, generator sensitivity, size × bins,
zero-bins extrapolation)."""

from xuqcal.studies import cube
from xuqcal.studies.simulation import (
    generator_sensitivity_study,
    size_bins_study,
    trial_seed,
    validation_probability,
    zero_bins_extrapolation,
)

__all__ = [
    "cube",
    "generator_sensitivity_study",
    "size_bins_study",
    "trial_seed",
    "validation_probability",
    "zero_bins_extrapolation",
]
