"""Bounds on every text a request carries, checked before anything reaches the database.

One table of limits serves both front doors: the JSON API declares them on its request
models and parameters (a violation is a problem+json 422 before the route runs), and the
store's forms call :func:`form_text` and :func:`form_choice` (a violation is a
:class:`~servekit.errors.UsageError`, which the pages render with its message). Every text
refuses NUL and the other control characters (a single-line field also refuses tab and
newline); PostgreSQL refuses NUL in text outright, and a control character in a stored
name is a way to fake what a page or a terminal shows.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Annotated, Final, TypeVar

from pydantic import AfterValidator, StringConstraints

from servekit.errors import UsageError
from servekit.store import accounts, passwords

EMAIL_MAX: Final = accounts.EMAIL_MAX
PASSWORD_MAX: Final = passwords.MAX_LENGTH  # NIST SP 800-63B: accept at least 64
NAME_MAX: Final = accounts.NAME_MAX  # token, workspace and signer names, titles
PARAGRAPH_MAX: Final = 4000  # the licensed entity and authority statement (multi-line)
KEY_MAX: Final = 200  # idempotency keys
E = TypeVar("E", bound=StrEnum)

# C0, DEL and C1 controls; a paragraph may carry tab, newline and carriage return
_LINE_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_PARAGRAPH_CONTROLS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
# path parameters: the shapes the store can hold (package ids are Identifiers, versions
# also "latest"); anything else cannot name a row, so it is refused before any query
PACKAGE_ID_PATTERN: Final = r"^[a-z0-9][a-z0-9._-]{0,127}$"
VERSION_PATTERN: Final = r"^[0-9A-Za-z][0-9A-Za-z.+-]{0,63}$"
SLUG_PATTERN: Final = r"^[a-z0-9][a-z0-9-]{0,62}$"
KEY_PATTERN: Final = r"^[\x21-\x7e]{8,200}$"  # printable ASCII, no space


def _no_line_controls(value: str) -> str:
    if _LINE_CONTROLS.search(value):
        raise ValueError("must not contain control characters (NUL, tab, newline, ESC...)")
    return value


def _no_paragraph_controls(value: str) -> str:
    if _PARAGRAPH_CONTROLS.search(value):
        raise ValueError("must not contain control characters other than tab and newline")
    return value


# The API's request model fields: pydantic reports a violation as a 422 naming the field.
NonEmptyLine = Annotated[
    str, StringConstraints(min_length=1, max_length=NAME_MAX), AfterValidator(_no_line_controls)
]
Paragraph = Annotated[
    str,
    StringConstraints(min_length=1, max_length=PARAGRAPH_MAX),
    AfterValidator(_no_paragraph_controls),
]
Email = Annotated[
    str, StringConstraints(min_length=3, max_length=EMAIL_MAX), AfterValidator(_no_line_controls)
]
Password = Annotated[str, StringConstraints(min_length=1, max_length=PASSWORD_MAX)]
PackageId = Annotated[str, StringConstraints(pattern=PACKAGE_ID_PATTERN)]
Version = Annotated[str, StringConstraints(pattern=VERSION_PATTERN)]
Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]


def form_text(value: str, field: str, max_length: int = NAME_MAX, *, lines: bool = False) -> str:
    """``value`` if it fits ``max_length`` and holds no control character (``lines``: tab
    and newline allowed); else a :class:`UsageError` naming the form field."""
    if len(value) > max_length:
        raise UsageError(
            f"the {field} is {len(value)} characters long; at most {max_length} are accepted",
            hint=f"shorten the {field}",
        )
    if (_PARAGRAPH_CONTROLS if lines else _LINE_CONTROLS).search(value):
        raise UsageError(
            f"the {field} contains a control character (such as NUL or ESC)",
            hint=f"type the {field} again without it",
        )
    return value


def form_choice(cls: type[E], value: str, field: str) -> E:
    """The member of ``cls`` named by a form's ``value``; an unknown one is a UsageError."""
    try:
        return cls(value)
    except ValueError:
        allowed = ", ".join(m.value for m in cls)
        raise UsageError(
            f"the {field} {value[:40]!r} is not one of: {allowed}",
            hint=f"choose a {field} the form offers",
        ) from None


def printable_prefix(value: str, max_length: int) -> str:
    """A header kept for the record (the User-Agent): control characters dropped, cut to
    ``max_length``; it is evidence of what the client said, never refused."""
    return _LINE_CONTROLS.sub("", value)[:max_length]
