"""One status per error class, on both front ends.

The real app (``create_app``) gets two extra routes that raise the error class named in
the path: one among the pages, one under ``/api/v1`` (a ``ProblemRoute``, as every API
route is). Each class must answer its ``status`` on both, the page in the site's error
template and the API as problem+json; a class that sets none is a 500 on both.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import APIRouter
from fastapi.testclient import TestClient

from servekit import errors
from servekit.config import Settings
from servekit.web.api.problems import MEDIA_TYPE, ProblemRoute
from servekit.web.api.routes import PREFIX
from servekit.web.app import create_app


def _classes(root: type[errors.Error]) -> Iterator[type[errors.Error]]:
    yield root
    for sub in root.__subclasses__():
        yield from _classes(sub)


CLASSES = {cls.__name__: cls for cls in _classes(errors.Error)}


def _raised(name: str) -> errors.Error:
    cls = CLASSES[name]
    if cls is errors.TooManySignInsError:
        return errors.TooManySignInsError("slow down", retry_after=7, hint="wait")
    exc = cls.__new__(cls)  # the classes with richer constructors keep Error's fields
    errors.Error.__init__(exc, f"{name} was raised", hint="the hint")
    return exc


pages = APIRouter()
api = APIRouter(prefix=PREFIX, route_class=ProblemRoute)


@pages.post("/test-raise/{name}")
def _raise_page(name: str) -> None:
    raise _raised(name)


@api.post("/test-raise/{name}")
def _raise_api(name: str) -> None:
    raise _raised(name)


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    home: Path = tmp_path_factory.mktemp("errors")
    app = create_app(Settings(home=home))
    app.include_router(pages)
    app.include_router(api)
    with TestClient(app, base_url="https://store.test", raise_server_exceptions=False) as c:
        yield c
    app.state.store.engine.dispose()


def _csrf(client: TestClient) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/signin").text)
    assert found
    return found.group(1)


@pytest.mark.parametrize("name", sorted(CLASSES))
def test_an_error_has_one_status_on_both_front_ends(client: TestClient, name: str) -> None:
    page = client.post(f"/test-raise/{name}", data={"csrf_token": _csrf(client)})
    answer = client.post(f"{PREFIX}/test-raise/{name}")
    status = CLASSES[name].status
    assert (page.status_code, answer.status_code) == (status, status), page.text
    assert page.headers["content-type"].startswith("text/html")
    said = _raised(name).message
    assert f"<h1>{status}</h1>" in page.text and said in page.text.replace("&#39;", "'")
    assert answer.headers["content-type"] == MEDIA_TYPE
    assert answer.json()["status"] == status


@pytest.mark.parametrize("name", ["Error", "StoreError", "VerificationError", "AuditError"])
def test_an_error_without_a_status_is_a_500_on_both(client: TestClient, name: str) -> None:
    assert "status" not in vars(CLASSES[name]) or name == "Error"
    page = client.post(f"/test-raise/{name}", data={"csrf_token": _csrf(client)})
    answer = client.post(f"{PREFIX}/test-raise/{name}")
    assert (page.status_code, answer.status_code) == (500, 500)


def test_retry_after_on_both_front_ends(client: TestClient) -> None:
    page = client.post("/test-raise/TooManySignInsError", data={"csrf_token": _csrf(client)})
    answer = client.post(f"{PREFIX}/test-raise/TooManySignInsError")
    assert page.headers["retry-after"] == answer.headers["retry-after"] == "7"
    assert answer.json()["retry_after"] == 7


def test_the_statuses_the_store_answers() -> None:
    """The statuses the API documents (docs/store.md), pinned where a class sets one (its
    subclasses inherit it)."""
    assert {name: cls.status for name, cls in CLASSES.items() if "status" in vars(cls)} == {
        "Error": 500,
        "UsageError": 422,
        "PackageError": 422,
        "ClaimRuleError": 422,
        "NotFoundError": 404,
        "TooManySignInsError": 429,
        "StoreNotFoundError": 404,
        "StoreConflictError": 409,
        "IdempotencyConflictError": 422,
        "LicenceRequiredError": 403,
        "AuthenticationError": 401,
        "PermissionDeniedError": 403,
        "PaymentError": 402,
        "WebhookSignatureError": 400,
        "NotForSaleError": 410,
    }
