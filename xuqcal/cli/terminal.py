"""Text printed to a terminal: names of files and labels with their control characters escaped.

A file name may hold any character but ``/`` and NUL, escape sequences included
(``$'\\e[2J\\e[31mred.csv'``): printed as it is, it would clear the screen or colour the
output, and a name that is not valid UTF-8 would raise a ``UnicodeEncodeError`` on print. Every
line the command prints that holds a name (titles, ``written:``, ``report:``, errors and
warnings) goes through :func:`escape`, which writes each non-printable character as Python's
``repr`` does (``\\x1b``, ``\\n``, ``\\u202e``, ``\\udcff``).
"""

from __future__ import annotations

import os

__all__ = ["escape"]


def escape(text: object, *, lines: bool = False) -> str:
    """``text`` (a str or a path) with its non-printable characters escaped as ``repr`` does;
    ``lines``: newlines are kept (a table of several lines).

    Examples
    --------
    >>> escape("\\x1b[2J\\x1b[31mred.csv")
    '\\\\x1b[2J\\\\x1b[31mred.csv'
    >>> print(escape("a\\tb\\nc"), escape("a\\nb", lines=True), sep=" | ")
    a\\tb\\nc | a
    b
    >>> escape("données_é.csv")
    'données_é.csv'
    """
    text = os.fspath(text) if isinstance(text, os.PathLike) else str(text)
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or (lines and c == "\n") else repr(c)[1:-1]
                   for c in text)
