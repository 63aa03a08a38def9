"""Errors as ``application/problem+json`` (RFC 9457): one status and one ``type`` per class."""

from __future__ import annotations

import re
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from starlette.requests import Request
from starlette.responses import Response

from servekit import errors

MEDIA_TYPE = "application/problem+json"
TYPE_PREFIX = "urn:servekit:problem:"

# most specific first: the first class an error is an instance of decides its status
STATUS: tuple[tuple[type[errors.Error], int], ...] = (
    (errors.StoreNotFoundError, 404),
    (errors.AuthenticationError, 401),
    (errors.TooManySignInsError, 429),
    (errors.PermissionDeniedError, 403),
    (errors.LicenceRequiredError, 403),
    (errors.IdempotencyConflictError, 422),
    (errors.StoreConflictError, 409),
    (errors.NotForSaleError, 410),
    (errors.WebhookSignatureError, 400),
    (errors.PaymentError, 402),
    (errors.UsageError, 422),
    (errors.PackageError, 422),
    (errors.ClaimRuleError, 422),
)


def problem_type(cls: type[BaseException]) -> str:
    """``urn:servekit:problem:already-owned`` for ``AlreadyOwnedError``: stable per class."""
    name = cls.__name__.removesuffix("Error") or cls.__name__
    return TYPE_PREFIX + re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


def status_of(exc: errors.Error) -> int:
    return next((code for cls, code in STATUS if isinstance(exc, cls)), 500)


def problem(status: int, type_: str, title: str, detail: str, **extra: Any) -> JSONResponse:
    body = {"type": type_, "title": title, "status": status, "detail": detail, **extra}
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return JSONResponse(body, status_code=status, media_type=MEDIA_TYPE, headers=headers)


def error_response(exc: errors.Error) -> JSONResponse:
    cls = type(exc)
    extra = {"hint": exc.hint} if exc.hint else {}
    doc = (cls.__doc__ or cls.__name__).strip().splitlines()[0]
    return problem(status_of(exc), problem_type(cls), doc, exc.message, **extra)


def validation_response(exc: RequestValidationError) -> JSONResponse:
    problems = [{"loc": list(e["loc"]), "msg": e["msg"]} for e in exc.errors()]
    return problem(
        422,
        TYPE_PREFIX + "invalid-request",
        "The request is not valid",
        "see errors",
        errors=problems,
    )


class ProblemRoute(APIRoute):
    """A route that renders servekit errors itself, so the router works wherever it is mounted."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        original = super().get_route_handler()

        async def handler(request: Request) -> Response:
            try:
                return await original(request)
            except errors.Error as exc:
                return error_response(exc)
            except RequestValidationError as exc:
                return validation_response(exc)

        return handler
