"""The web room has one way in: routes and pages reach the app's services through
:mod:`servekit.web.deps`, and the licence form and the API body are one request model."""

from __future__ import annotations

import ast
from pathlib import Path

from fastapi.routing import APIRoute

from servekit.config import Settings
from servekit.store.models import Clause
from servekit.web import licence
from servekit.web.api import routes
from servekit.web.app import create_app

WEB = Path(licence.__file__).parent


def test_only_the_dependencies_read_app_state() -> None:
    readers = set()
    for path in WEB.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and node.attr == "state"
                and isinstance(node.value, ast.Attribute)
                and node.value.attr == "app"
            ):
                readers.add(path.relative_to(WEB).as_posix())  # request.app.state
    assert readers <= {"deps.py"}, readers
    assert "deps.py" in readers


def test_the_api_routes_are_defined_once_at_module_level(tmp_path: Path) -> None:
    """Each ``/api/v1`` route is a function of the routes module (no closure over an app's
    context), and the app serves that router."""
    ours = [r for r in routes.router.routes if isinstance(r, APIRoute)]
    assert len(ours) > 10
    for route in ours:
        assert getattr(routes, route.endpoint.__name__) is route.endpoint, route.path
    app = create_app(Settings(home=tmp_path))
    try:
        served = app.openapi()["paths"]
    finally:
        app.state.store.engine.dispose()
    assert {r.path for r in ours} <= set(served)


def test_the_licence_form_and_the_api_body_are_one_model(tmp_path: Path) -> None:
    app = create_app(Settings(home=tmp_path))
    try:
        schema = app.openapi()
    finally:
        app.state.store.engine.dispose()
    sign = schema["paths"][routes.PREFIX + routes.WS + "/licence-signatures"]["post"]
    ref = sign["requestBody"]["content"]["application/json"]["schema"]["$ref"]
    assert ref.endswith("/" + licence.LicenceSignatureRequest.__name__)
    kept = {
        "licensed_entity": "Acme Corp\nEMEA",
        "signer_name": "Ada",
        "signer_title": "CTO",
        "authority_statement": "by board resolution",
    }
    sha = "a" * 64
    from_form = licence.from_form("llama", "1.0.0", kept, set(Clause), sha)
    body = licence.LicenceSignatureRequest.model_validate(
        {
            "package_id": "llama",
            "version": "1.0.0",
            "affirmations": {c.value: True for c in Clause},
            "terms_sha256": sha,
            **kept,
        }
    )
    assert from_form == body
