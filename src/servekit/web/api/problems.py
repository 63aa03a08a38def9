"""Errors as ``application/problem+json`` (RFC 9457): one status and one ``type`` per class."""

from __future__ import annotations

import re
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from pydantic import BaseModel, ConfigDict
from starlette.requests import Request
from starlette.responses import Response

from servekit import errors

MEDIA_TYPE = "application/problem+json"
TYPE_PREFIX = "urn:servekit:problem:"

DESCRIPTIONS: dict[int, str] = {
    400: "The request is malformed (a webhook's signature does not verify).",
    401: "No valid bearer session or API token (or a wrong email or password).",
    402: "The payment provider declined the charge.",
    403: "Your role may not do this, or the version needs a signed licence first.",
    404: "No such resource in this workspace (or no such workspace for you).",
    409: "The request conflicts with the store's state (already owned, key reused...).",
    410: "The version is no longer for sale (retracted).",
    413: "The request body is larger than the server accepts.",
    422: "A parameter or field is missing, too long, malformed or not an allowed value.",
    429: "Too many failed sign-ins; the Retry-After header says when to try again.",
    500: "The server failed; nothing in the request is at fault.",
}


class Problem(BaseModel):
    """An error as ``application/problem+json`` (RFC 9457)."""

    model_config = ConfigDict(frozen=True)

    type: str
    title: str
    status: int
    detail: str
    hint: str | None = None
    errors: list[dict[str, Any]] | None = None
    retry_after: int | None = None


def responses(*codes: int) -> dict[int | str, dict[str, Any]]:
    """The OpenAPI ``responses`` of a route that can answer ``codes`` (plus 422 and 500,
    which every route can)."""
    ref = {"schema": {"$ref": "#/components/schemas/Problem"}}
    return {
        code: {"model": Problem, "description": DESCRIPTIONS[code], "content": {MEDIA_TYPE: ref}}
        for code in sorted({*codes, 422, 500})
    }


def problem_type(cls: type[BaseException]) -> str:
    """``urn:servekit:problem:already-owned`` for ``AlreadyOwnedError``: stable per class."""
    name = cls.__name__.removesuffix("Error") or cls.__name__
    return TYPE_PREFIX + re.sub(r"(?<!^)(?=[A-Z])", "-", name).lower()


def problem_of(exc: errors.Error) -> Problem:
    """What both front ends say about ``exc``: its class's ``status`` and ``type``, the first
    line of its docstring as the title, its message and hint (the HTML error page renders
    the same :class:`Problem`: :func:`servekit.web.pages.error_page`)."""
    cls = type(exc)
    retry = exc.retry_after if isinstance(exc, errors.TooManySignInsError) else None
    return Problem(
        type=problem_type(cls),
        title=(cls.__doc__ or cls.__name__).strip().splitlines()[0],
        status=exc.status,
        detail=exc.message,
        hint=exc.hint or None,
        retry_after=retry,
    )


def retry_headers(found: Problem) -> dict[str, str]:
    """``Retry-After`` when the problem says when to try again (too many sign-ins)."""
    return {} if found.retry_after is None else {"Retry-After": str(found.retry_after)}


def problem(status: int, type_: str, title: str, detail: str, **extra: Any) -> JSONResponse:
    body = {"type": type_, "title": title, "status": status, "detail": detail, **extra}
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else {}
    if "retry_after" in extra:
        headers["Retry-After"] = str(extra["retry_after"])
    return JSONResponse(body, status_code=status, media_type=MEDIA_TYPE, headers=headers)


def error_response(exc: errors.Error) -> JSONResponse:
    found = problem_of(exc)
    extra = found.model_dump(exclude_none=True, exclude={"type", "title", "status", "detail"})
    return problem(found.status, found.type, found.title, found.detail, **extra)


def internal_error() -> JSONResponse:
    """A bug's 500, as a problem (the trace stays in the server's log)."""
    return problem(
        500, TYPE_PREFIX + "internal", "Internal server error", "the server failed; try again"
    )


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
