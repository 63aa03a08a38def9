"""The contract between each store page's template and its typed context.

Every page template has one context type (:mod:`servekit.web.contexts`); each renders
with an instance of it, and a template that names a variable its context type lacks (not
a field, not the store's frame, not a global of the environment) fails here, before a
visitor meets the ``UndefinedError``.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from importlib.resources import files

import pytest
from jinja2 import ChoiceLoader, DictLoader, Environment, meta, nodes

from servekit.errors import UsageError
from servekit.receipts.trust import Scope
from servekit.store.models import Clause, OrderKind, OrderStatus, Role
from servekit.store.results import (
    EntitlementInfo,
    LicenceTerms,
    OrderInfo,
    Principal,
    QuoteInfo,
    TokenInfo,
    VersionInfo,
)
from servekit.web import contexts, licence
from servekit.web.keys import StoreKey
from servekit.web.pages import Frame, environment, render_page

NOW = dt.datetime(2026, 1, 2, 3, 4, tzinfo=dt.UTC)
WS = Principal(user_id=1, workspace_id=1, workspace="acme", role=Role.OWNER)
V = VersionInfo(
    package_id="llama-3-8b",
    version="1.0.0",
    name="Llama 3 8B",
    summary="a recipe",
    tier="enterprise",
    currency="usd",
    price_cents=12_500,
    maintenance_cents=5_000,
    licence_required=True,
    licence_name="enterprise",
    licence_sha256="a" * 64,
    kit_sha256="b" * 64,
    kit_bytes=1024,
    published_at=NOW,
    retracted=False,
)
HELD = EntitlementInfo(
    id=3,
    package_id=V.package_id,
    version=V.version,
    kind=OrderKind.SUBSCRIPTION,
    order_id=4,
    active=True,
    revoked=False,
    retracted=False,
    period_end=NOW,
    downloadable=(V.version,),
    sign_to_receive=("1.1.0",),
)
ORDER = OrderInfo(
    id=4,
    package_id=V.package_id,
    version=V.version,
    kind=OrderKind.PURCHASE,
    status=OrderStatus.PAID,
    currency="usd",
    amount_cents=12_500,
    provider="sandbox",
    payment_ref="ref-1",
    signature_id=2,
    entitlement_id=3,
    created_at=NOW,
)
TERMS = LicenceTerms(
    package_id=V.package_id,
    version=V.version,
    terms_text="the terms",
    terms_sha256="a" * 64,
    clauses={c: f"I affirm {c.value}" for c in Clause},
)
SIGNING = contexts.Signing(key_id="c" * 64, origin="https://store.test")
REFUSED = UsageError("the thing is wrong", hint="do it again")
TOKEN = TokenInfo(id=5, name="ci", prefix="sk_abc", created_at=NOW, revoked=False)
QUOTE = QuoteInfo(
    id=6,
    package_id=V.package_id,
    version=V.version,
    kind=OrderKind.PURCHASE,
    currency="usd",
    amount_cents=12_500,
    licence_required=True,
    expires_at=NOW,
)

SAMPLES: dict[type[contexts.PageContext], contexts.PageContext] = {
    contexts.ErrorPage: contexts.ErrorPage(code=404, message="no such page", hint="go back"),
    contexts.SignupPage: contexts.SignupPage(next="/buy/x/1", error=REFUSED, email="a@b.test"),
    contexts.SigninPage: contexts.SigninPage(next="/w/acme", signed_up=True, error=REFUSED),
    contexts.SignoutPage: contexts.SignoutPage(),
    contexts.AccountPage: contexts.AccountPage(workspaces=[("acme", "Acme", Role.OWNER)]),
    contexts.WorkspacePage: contexts.WorkspacePage(
        ws=WS,
        members=[("a@b.test", Role.OWNER)],
        entitlements=[HELD],
        undeployable={(V.package_id, V.version)},
        tokens=[TOKEN],
        signing=SIGNING,
        error=REFUSED,
        member_email="c@d.test",
    ),
    contexts.TokenPage: contexts.TokenPage(ws=WS, token={"name": "ci", "token": "sk_secret"}),
    contexts.CancelPage: contexts.CancelPage(ws=WS, e=HELD),
    contexts.OrdersPage: contexts.OrdersPage(ws=WS, orders=[ORDER]),
    contexts.OrderPage: contexts.OrderPage(ws=WS, order=ORDER, held=True, v=V, signing=SIGNING),
    contexts.BuyPage: contexts.BuyPage(
        v=V,
        owned=[("acme", "Acme")],
        workspaces=[("acme", "Acme", None), ("beta", "Beta", "it holds no version")],
        chosen={"workspace": "beta", "kind": "subscription"},
        nothing_left=False,
        signing=SIGNING,
        error=REFUSED,
    ),
    contexts.QuotePage: contexts.QuotePage(
        ws=WS,
        q=QUOTE,
        v=V,
        notes=["a note"],
        signed=True,
        idempotency_key="k" * 32,
        signing=SIGNING,
        error=REFUSED,
    ),
    contexts.LicencePage: contexts.LicencePage(
        ws=WS,
        terms=TERMS,
        quote_id=6,
        kept={**dict.fromkeys(licence.FORM_FIELDS, ""), "licensed_entity": "Acme"},
        affirmed={Clause.AUTHORITY},
        error=REFUSED,
    ),
    contexts.KeysPage: contexts.KeysPage(
        keys=[StoreKey(key_id="c" * 64, pem=b"PEM", scopes=(Scope("acme", ("llama-*",)),))],
        origin="https://store.test",
    ),
}
PAGES = (*contexts.STORE_PAGES, contexts.KeysPage)
FRAME = Frame(csrf="csrf-token", signed_in=True, test_mode=True, here="/w/acme")


def _page_templates() -> set[str]:
    """Every page template of the web app (partials start with ``_``)."""
    root = files("servekit.web") / "templates"
    return {
        f"{area.name}/{t.name}"
        for area in root.iterdir()
        if area.is_dir()
        for t in area.iterdir()
        if t.name.endswith(".html") and not t.name.startswith("_")
    }


def test_every_page_template_has_one_context_type() -> None:
    assert sorted(cls.template for cls in PAGES) == sorted(_page_templates())
    assert set(SAMPLES) == set(PAGES)


def names_used(env: Environment, name: str, overridden: frozenset[str] = frozenset()) -> set[str]:
    """The variables ``name`` reads from its context, with what it includes and extends
    (a parent's blocks that a child overrides are never rendered, so not counted)."""
    assert env.loader is not None
    ast = env.parse(env.loader.get_source(env, name)[0])
    own = frozenset(block.name for block in ast.find_all(nodes.Block))
    for block in ast.find_all(nodes.Block):
        if block.name in overridden:
            block.body = []
    found = set(meta.find_undeclared_variables(ast))
    parent = ast.find(nodes.Extends)
    parent_name = (
        parent.template.value if parent and isinstance(parent.template, nodes.Const) else None
    )
    for ref in meta.find_referenced_templates(ast):
        assert ref is not None, f"{name} includes a template by a computed name"
        found |= (
            names_used(env, ref, overridden | own) if ref == parent_name else names_used(env, ref)
        )
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda cls: cls.__name__)
def test_a_template_names_only_its_context(page: type[contexts.PageContext]) -> None:
    env = environment()
    known = {f.name for f in dataclasses.fields(page)} | set(env.globals)
    if page in contexts.STORE_PAGES:
        known.add("frame")  # the store's frame: pages.Frame
    assert names_used(env, page.template) - known == set()


@pytest.mark.parametrize("page", PAGES, ids=lambda cls: cls.__name__)
def test_a_template_renders_with_its_context(page: type[contexts.PageContext]) -> None:
    sample = SAMPLES[page]
    body = render_page(sample, FRAME if page in contexts.STORE_PAGES else None)
    assert "</html>" in body
    if isinstance(sample, contexts.FormPage) and sample.error is not None:
        assert "the thing is wrong" in body
    if isinstance(sample, contexts.SigningKeyPage):
        assert SIGNING.key_id and SIGNING.key_id in body


def test_a_variable_outside_the_context_is_caught() -> None:
    """The check itself: a name the context lacks is reported, in the page or in a block
    of the layout it extends, and a parent's overridden block is not counted."""
    base = environment()
    stray = (
        '{% extends "store/_layout.html" %}'
        "{% block body %}{{ ws.workspace }}{{ stray }}{% endblock %}"
    )
    env = base.overlay(loader=ChoiceLoader([DictLoader({"store/x.html": stray}), base.loader]))
    assert names_used(env, "store/x.html") - {"ws", "frame", *env.globals} == {"stray"}
    assert "live" in names_used(env, "catalog/_base.html")  # its nav block, which
    assert "live" not in names_used(env, "store/x.html")  # store/_layout.html overrides
