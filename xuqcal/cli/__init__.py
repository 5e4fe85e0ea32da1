"""The ``xuqcal`` command line: ``validate``, ``demo``, ``report``, ``cube``, ``recalibrate``.

The commands are in :mod:`xuqcal.cli.commands` (``recalibrate`` in
:mod:`xuqcal.cli.recalibrate`); :mod:`xuqcal.cli.common` holds the option parsers and messages
they share.
"""

from xuqcal.cli.commands import main

__all__ = ["main"]
