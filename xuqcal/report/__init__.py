"""The HTML validation report (:func:`report`), written by ``xuqcal report``."""

from xuqcal.report.html import check_folder, report

__all__ = ["check_folder", "report"]
