"""Sphinx configuration: builds offline (no intersphinx), warnings are errors in the tests."""

from xuqcal import __version__

project = "xuqcal"
author = "the xuqcal developers"
release = __version__
version = __version__
extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.mathjax",
    "myst_parser",
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
napoleon_google_docstring = False
napoleon_numpy_docstring = True
napoleon_use_rtype = False
autodoc_typehints = "none"
autodoc_member_order = "bysource"
html_theme = "alabaster"
html_static_path: list[str] = []
myst_heading_anchors = 3
suppress_warnings = ["myst.header"]
