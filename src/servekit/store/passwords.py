"""The password policy, after NIST SP 800-63B (section 5.1.1): length and a blocklist.

Refused: fewer than :data:`MIN_LENGTH` or more than :data:`MAX_LENGTH` characters (Unicode
code points, after NFKC normalisation, as 800-63B counts them); one of the 5 000 most
common passwords of that length (``common_passwords.txt``, from zxcvbn's list of leaked
passwords), also with digits or symbols appended (``password123!``); one character
repeated or a run of consecutive characters (``aaaaaaaa``, ``12345678``, ``abcdefgh``);
and a password built on its context: the email's name or domain, or the service's own
name. There are no composition rules (no "one digit, one capital"), no expiry, and spaces
and every printable character are allowed: 800-63B advises against all of those.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache
from importlib.resources import files
from itertools import pairwise

from servekit.errors import UsageError

MIN_LENGTH = 8
MAX_LENGTH = 256  # 800-63B: allow at least 64
CONTEXT_WORDS = ("servekit",)
_SUFFIX = re.compile(r"[\d\W_]+$")


@cache
def common_passwords() -> frozenset[str]:
    text = files("servekit.store").joinpath("common_passwords.txt").read_text("utf-8")
    return frozenset(line for line in text.splitlines() if line and not line.startswith("#"))


def _normal(password: str) -> str:
    return unicodedata.normalize("NFKC", password).casefold()


def _monotonous(word: str) -> bool:
    """One character repeated, or a run that steps by one code point (either way)."""
    steps = {ord(b) - ord(a) for a, b in pairwise(word)}
    return len(steps) == 1 and steps <= {-1, 0, 1}


def _context(email: str) -> list[str]:
    local, _, domain = email.casefold().partition("@")
    words = [*re.split(r"[^\w]+", local), *domain.split(".")[:-1], *CONTEXT_WORDS]
    return [w for w in words if len(w) >= 4]


def weakness(password: str, *, email: str) -> str | None:
    """Why ``password`` is refused for ``email``'s account, or None when it is accepted."""
    normal = _normal(password)
    if len(normal) < MIN_LENGTH:
        return f"is {len(normal)} characters long; use at least {MIN_LENGTH}"
    if len(normal) > MAX_LENGTH:
        return f"is {len(normal)} characters long; at most {MAX_LENGTH} are accepted"
    stem = _SUFFIX.sub("", normal)
    if normal in common_passwords() or (len(stem) >= 4 and stem in common_passwords()):
        return "is one of the most common passwords (attackers try those first)"
    if _monotonous(normal.replace(" ", "")):
        return "is one character repeated, or a run like 12345678 or abcdefgh"
    found = next((w for w in _context(email) if w in normal), None)
    if found is not None:
        return f"contains {found!r}, taken from the email address or the service's name"
    return None


def check_password(password: str, *, email: str) -> None:
    """Raise :class:`UsageError` saying why, when :func:`weakness` finds one."""
    why = weakness(password, email=email)
    if why is not None:
        raise UsageError(
            f"the password {why}",
            hint="choose a longer passphrase of unrelated words; any characters are allowed",
        )
