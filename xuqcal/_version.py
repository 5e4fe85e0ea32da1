"""The installed version of xuqcal (recorded in every result's attributes)."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("xuqcal")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"
