"""Blocks whose foreign parse errors become servekit errors: pydantic's ``ValidationError``
(:func:`validating`), or it and the exceptions a parser raises (:func:`parsing`)."""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING

from servekit.errors import Error

if TYPE_CHECKING:  # pydantic loads with the first model, not here (docs/performance.md)
    from pydantic import ValidationError


class validating:  # noqa: N801 - used as ``with validating(failed):``, like a function
    """A block that builds a pydantic model: a ``ValidationError`` raised in it becomes
    ``failed(exc)`` (usually worded by :func:`~servekit.seams.validation_problems`)."""

    def __init__(self, failed: Callable[[ValidationError], Error]) -> None:
        self.failed = failed

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is None or not isinstance(exc, Exception):
            return
        from pydantic import ValidationError  # only once something failed

        if isinstance(exc, ValidationError):
            raise self.failed(exc) from exc


class parsing:  # noqa: N801 - used as ``with parsing(failed, ValueError):``, like a function
    """A block that parses foreign input: a pydantic ``ValidationError`` or any of ``kinds``
    (``ValueError`` for JSON and base64, ``KeyError`` for a missing field...) raised in it
    becomes ``failed(exc)`` (usually worded by :func:`~servekit.seams.problem_text`)."""

    def __init__(self, failed: Callable[[Exception], Error], *kinds: type[Exception]) -> None:
        self.failed, self.kinds = failed, kinds

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is None or not isinstance(exc, Exception) or isinstance(exc, Error):
            return
        from pydantic import ValidationError  # only once something failed

        if isinstance(exc, (ValidationError, *self.kinds)):
            raise self.failed(exc) from exc
