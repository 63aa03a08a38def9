"""``--expect``: the exact package, or a version no older than asked."""

from __future__ import annotations

import itertools

import pytest

from servekit.errors import UnexpectedKitError, UsageError
from servekit.verify.expect import Expectation, version_key

ASCENDING = [
    "0.9.99",
    "1.0.0-alpha",
    "1.0.0-rc1",
    "1.0.0-rc2",
    "1.0.0-rc9",
    "1.0.0-rc10",
    "1.0.0",
    "1.0.0.1",
    "1.0.0.2",
    "1.0.0.10",
    "1.0.1",
    "1.2.0",
    "1.10.0",
]


@pytest.mark.parametrize(("older", "newer"), list(itertools.pairwise(ASCENDING)))
def test_versions_order_numbers_as_numbers(older: str, newer: str) -> None:
    assert version_key(older) < version_key(newer)


@pytest.mark.parametrize(
    ("asked", "served"), [("1.0.0-rc10", "1.0.0-rc9"), ("1.0.0.10", "1.0.0.9")]
)
def test_an_older_pre_or_post_release_does_not_satisfy_at_least(asked: str, served: str) -> None:
    with pytest.raises(UnexpectedKitError):
        Expectation.parse(f"tiny@>={asked}").check("tiny", served)
    Expectation.parse(f"tiny@>={served}").check("tiny", asked)


@pytest.mark.parametrize("served", ["1.0.0-rc1", "1.0.0.1", "1.0.1"])
def test_an_exact_version_is_exact(served: str) -> None:
    with pytest.raises(UnexpectedKitError):
        Expectation.parse("tiny@1.0.0").check("tiny", served)


@pytest.mark.parametrize(
    "text", ["tiny@1.0.0\n", "tiny@1.0", "tiny@1.0.0+x", "tiny@ 1.0.0", "tiny@=1.0.0", "@1.0.0"]
)
def test_malformed_expectations_are_usage_errors(text: str) -> None:
    with pytest.raises(UsageError):
        Expectation.parse(text)


def test_version_key_refuses_a_trailing_newline() -> None:
    with pytest.raises(UsageError):
        version_key("1.0.0\n")
