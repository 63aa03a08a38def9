"""The password policy (after NIST SP 800-63B): length, the common-password list, runs and
repeats, and words taken from the context; no composition rules."""

from __future__ import annotations

import pytest

from servekit.store.passwords import MAX_LENGTH, common_passwords, weakness


@pytest.mark.parametrize(
    ("password", "why"),
    [
        ("seven77", "is 7 characters long; use at least 8"),
        ("x" * (MAX_LENGTH + 1), f"is {MAX_LENGTH + 1} characters long; at most {MAX_LENGTH}"),
        ("12345678", "most common passwords"),
        ("password", "most common passwords"),
        ("PassWord", "most common passwords"),  # case does not hide it
        ("Password123!", "most common passwords"),  # nor digits and symbols appended
        (
            "".join(chr(ord(c) + 0xFEE0) for c in "password"),
            "most common passwords",
        ),  # nor full-width letters (NFKC)
        ("trustno1", "most common passwords"),
        ("zzzzzzzzzz", "one character repeated"),
        ("abcdefghijk", "a run like"),
        ("9876543210", "a run like"),
        ("lovelace in winter", "contains 'lovelace'"),  # the email's name
        ("my servekit secret", "contains 'servekit'"),  # the service's name
        ("analytical engine", "contains 'analytical'"),  # the email's domain
    ],
)
def test_a_weak_password_is_refused_saying_why(password: str, why: str) -> None:
    found = weakness(password, email="ada.lovelace@analytical.test")
    assert found is not None and why in found, found


@pytest.mark.parametrize(
    "password",
    [
        "correct horse",  # no digit, no capital, no symbol: 800-63B asks for none
        "Tr0ub4dor&3 is worse",
        "pâté à la crème brûlée",  # any Unicode
        "long " * 12 + "passphrase of sixty-odd chars",
        "qqqwww zz",  # repeats, but not one repeat or run
        "the longest: " + "seven w" * 34 + "ords",  # 255 characters
    ],
)
def test_a_long_uncommon_password_of_any_shape_is_accepted(password: str) -> None:
    assert weakness(password, email="ada.lovelace@analytical.test") is None


def test_the_shipped_list_holds_thousands_of_passwords_the_length_lets_through() -> None:
    words = common_passwords()
    assert len(words) == 5000 and all(len(w) >= 8 for w in words)
    assert {"password", "12345678", "qwertyuiop", "iloveyou"} <= words
