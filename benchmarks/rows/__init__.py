"""The benchmark rows, one module per row or family of rows (a row is found by its name:
``rows/<name>.py``, or ``rows/<prefix>.py`` for a family whose rows' names start with it).

Importing this package registers every row in :data:`harness.REGISTRY`, in the order of the
results table.
"""

import importlib

#: The modules of the rows, in the order of the results table (the order they register in).
MODULES = ("zms_bca", "binned_bca_qm9", "nine_sets", "lzms_qm9", "cube_full",
           "cc_jackknife_1e6", "bootstrap_memory_1e6", "validate", "out_of_core_1e8_zarr",
           "compare_10_models_1e5")

for _module in MODULES:
    importlib.import_module(f"{__name__}.{_module}")
