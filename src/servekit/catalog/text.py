"""Text from a package made inert on a page, as the CLI makes it inert on a terminal.

A package's name, summary or figure label may carry Unicode direction controls (U+202E
RIGHT-TO-LEFT OVERRIDE shows ``gnp.exe`` as ``exe.png``), invisible characters (U+200B
ZERO WIDTH SPACE) or other controls. The CLI escapes every character that is not
printable (:func:`servekit.errors.printable`, ``str.isprintable``); the pages escape the
same set, shown as ``\\u202e``, except whitespace, which HTML shows as a space anyway.
Both Jinja environments apply :func:`finalize` to everything a template outputs.
"""

from __future__ import annotations

import unicodedata

from markupsafe import Markup

_SHOWN_WHITESPACE = frozenset(" \t\n\r")


def _inert_char(c: str) -> str:
    if c.isprintable() or c in _SHOWN_WHITESPACE or unicodedata.category(c) == "Zs":
        return c
    return ascii(c)[1:-1]


def inert(text: str) -> str:
    """``text`` with each direction, invisible or control character escaped."""
    if text.isprintable():  # the common case: nothing to do
        return text
    return "".join(_inert_char(c) for c in text)


def finalize(value: object) -> object:
    """Jinja's ``finalize``: strings and markup made inert; anything else as it is."""
    if isinstance(value, Markup):
        return Markup(inert(str(value)))
    if isinstance(value, str):
        return inert(value)
    return value
