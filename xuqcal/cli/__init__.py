"""The ``xuqcal`` command line: ``validate``, ``demo``, ``report``, ``cube``, ``recalibrate``.

The commands are in :mod:`xuqcal.cli.commands` (``recalibrate`` in
:mod:`xuqcal.cli.recalibrate`); :mod:`xuqcal.cli.common` holds the option parsers and messages
they share, :mod:`xuqcal.cli.inputs` the reading of the input files (CSV, NetCDF, Zarr; several
files stacked along ``dataset``). ``python -m xuqcal`` and ``python -m xuqcal.cli`` run the
command.
"""

from xuqcal.cli.commands import main

__all__ = ["main"]
