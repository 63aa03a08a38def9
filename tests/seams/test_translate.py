"""``validating`` and ``parsing`` turn a foreign parse error raised in their block into
the caller's error, raised from it, and let everything else through."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel, ValidationError

from servekit.errors import BenchError, UsageError
from servekit.seams import parsing, problem_text, validating, validation_problems


class Point(BaseModel):
    x: int


def _usage(exc: ValidationError) -> UsageError:
    return UsageError(validation_problems(exc))


def test_validating_words_the_problem() -> None:
    with pytest.raises(UsageError, match=r"^x must be a valid integer") as info, validating(_usage):
        Point.model_validate({"x": "left"})
    assert isinstance(info.value.__cause__, ValidationError)


def test_validating_lets_other_errors_through() -> None:
    with pytest.raises(KeyError), validating(_usage):
        raise KeyError("x")
    with validating(_usage):
        assert Point.model_validate({"x": 1}).x == 1


def test_parsing_catches_validation_and_the_kinds_named() -> None:
    def failed(exc: Exception) -> BenchError:
        return BenchError(f"bad: {problem_text(exc)}")

    with (
        pytest.raises(BenchError, match="bad: Expecting property name"),
        parsing(failed, ValueError),
    ):
        json.loads("{")
    with pytest.raises(BenchError, match="bad: x is required"), parsing(failed):
        Point.model_validate({})
    with pytest.raises(KeyError), parsing(failed, ValueError):
        raise KeyError("x")
    # a servekit error raised in the block is never translated again
    with pytest.raises(UsageError, match="own"), parsing(failed, Exception):
        raise UsageError("own")
