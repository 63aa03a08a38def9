"""Hostile package text is shown as text: live pages and the static export.

Every string field of a package that accepts free text gets a payload with a script tag,
an attribute break-out with an event handler, and a ``javascript:`` URL. The rendered HTML
is parsed: no script element, no ``on*`` attribute, no ``javascript:`` link or source.
"""

from __future__ import annotations

import copy
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import httpx
from markupsafe import Markup
from pydantic import ValidationError

from servekit.catalog import export_site, load_catalog
from servekit.catalog.publish import PublishedCatalog, publish
from servekit.package.models import Package
from tests.package.factories import base_definition, default_runs, write_package
from tests.web.server import serving

PAYLOAD = '<script>alert(1)</script>"><img src=x onerror=alert(1)> javascript:alert(1)'
JS_URL = "javascript:alert(document.cookie)"
OWN_SCRIPTS = [[("src", "/static/catalog.js"), ("defer", None)]]  # servekit's, from its origin


class _Audit(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.problems: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script" and attrs not in OWN_SCRIPTS:
            self.problems.append("a <script> element")
        for name, value in attrs:
            if name.startswith("on"):
                self.problems.append(f"<{tag} {name}=...>")
            if name in {"href", "src", "action"} and (value or "").strip().lower().startswith(
                "javascript:"
            ):
                self.problems.append(f"<{tag} {name}={value}>")


def audit(html: str) -> list[str]:
    parser = _Audit()
    parser.feed(html)
    return parser.problems


def _leaves(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(node, dict):
        return [p for k, v in node.items() for p in _leaves(v, (*path, k))]
    if isinstance(node, list):
        return [p for i, v in enumerate(node) for p in _leaves(v, (*path, i))]
    return [path] if isinstance(node, str) else []


def _set(root: Any, path: tuple[Any, ...], value: str) -> None:
    for key in path[:-1]:
        root = root[key]
    root[path[-1]] = value


def hostile_definition() -> tuple[dict[str, Any], int]:
    """The base package with the payload in every field the schema lets it into."""
    definition = base_definition(default_runs()["run-a"])
    definition["measurements"]["figures"].append(
        {
            "id": "reported-p50-c4",
            "label": "reported",
            "metric": "e2el",
            "statistic": "p50",
            "concurrency": 4,
            "value": 1.0,
            "provenance": "reported",
            "source": {"name": "someone", "reference": JS_URL, "date": "2026-11-30"},
            "on_card": True,
        }
    )
    definition["disclosures"] = [{"topic": "other", "title": "t", "text": "x"}]
    definition["roadmap"] = [{"version": "2", "trigger": "t", "plan": "p"}]
    definition["solved"] = ["s"]
    changed = 0
    for path in _leaves(definition):
        trial = copy.deepcopy(definition)
        _set(trial, path, PAYLOAD)
        try:
            Package.model_validate(trial)
        except ValidationError:
            continue
        definition, changed = trial, changed + 1
    definition["measurements"]["figures"][-1]["source"]["reference"] = JS_URL  # a "link"
    return definition, changed


def test_payload_reaches_the_text_fields() -> None:
    definition, changed = hostile_definition()
    assert changed >= 40
    for text in (definition["name"], definition["summary"], definition["accuracy"]["claim"]):
        assert text == PAYLOAD


def test_live_pages_and_static_export_show_hostile_text_as_text(tmp_path: Path) -> None:
    definition, _ = hostile_definition()
    package = tmp_path / "packages" / "hostile"
    write_package(package, definition=definition)
    publish([package], tmp_path / "home")
    with serving(tmp_path / "home", PublishedCatalog(tmp_path / "home")) as url:
        live = {
            path: httpx.get(url + path).text
            for path in ("/", "/packages/tiny-test/1.0.0", "/packages/nope/<script>")
        }
    site = tmp_path / "site"
    export_site(load_catalog(tmp_path / "packages"), site)
    exported = {p.name: p.read_text() for p in site.glob("*.html")}
    for name, html in {**live, **exported}.items():
        assert audit(html) == [], name
    page = live["/packages/tiny-test/1.0.0"]
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # shown, as text
    assert JS_URL in page  # the source is shown, but not as a link
    assert "&lt;script&gt;" in exported["tiny-test-1.0.0.html"]


def test_audit_catches_what_it_looks_for() -> None:
    assert audit('<script src="/static/catalog.js" defer></script>') == []
    assert audit('<script src="/static/other.js" defer></script>') == ["a <script> element"]
    assert audit('<p><script>x</script><img src=x onerror=y><a href=" javascript:z">') == [
        "a <script> element",
        "<img onerror=...>",
        "<a href= javascript:z>",
    ]


REVERSED = "report\u202egnp.exe \u200bhidden\u2066isolate\u2069 \u061c end"
INERT = ("\u202e", "\u200b", "\u2066", "\u2069", "\u061c")


def test_direction_and_invisible_characters_are_shown_escaped_on_every_page(
    tmp_path: Path,
) -> None:
    definition = base_definition(default_runs()["run-a"])
    definition["name"] = definition["summary"] = REVERSED
    package = tmp_path / "packages" / "reversed"
    write_package(package, definition=definition)
    publish([package], tmp_path / "home")
    with serving(tmp_path / "home", PublishedCatalog(tmp_path / "home")) as url:
        live = {p: httpx.get(url + p).text for p in ("/", "/packages/tiny-test/1.0.0")}
        error = httpx.get(url + "/packages/nope/%E2%80%AE1.0")  # echoed in its error
    site = tmp_path / "site"
    export_site(load_catalog(tmp_path / "packages"), site)
    exported = {p.name: p.read_text() for p in site.glob("*.html")}
    assert error.status_code == 404 and "nope \\u202e1.0" in error.text
    for name, html in {**live, **exported, "error": error.text}.items():
        assert not any(c in html for c in INERT), name
    for name, html in {**live, **exported}.items():
        assert "report\\u202egnp.exe \\u200bhidden\\u2066isolate\\u2069" in html, name


def test_the_store_pages_escape_the_same_characters() -> None:
    from servekit.web.pages import environment

    shown = (
        environment()
        .from_string("<p>{{ name }}</p>{{ markup }}")
        .render(name=REVERSED, markup=Markup("<b>\u202e</b>"))
    )
    assert not any(c in shown for c in INERT)
    assert shown.endswith("<b>\\u202e</b>")  # markup stays markup, made inert too
