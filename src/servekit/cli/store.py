"""``servekit store``: operate the store (publish, retract, audit, accounts) and download kits."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from servekit.cli.choices import RoleName
from servekit.cli.output import plain, print_json, stdout
from servekit.errors import UsageError

if TYPE_CHECKING:
    from servekit import config
    from servekit.store import operator
else:  # the store and the settings load when a command runs, not for --help
    from servekit.cli.lazy import LazyModule

    config = LazyModule("servekit.config")
    operator = LazyModule("servekit.store.operator")


def load_settings() -> config.Settings:
    return config.load_settings()


app = typer.Typer(
    help="The store: publish and retract versions, audit the ledger and licence chain, "
    "manage accounts, serve the JSON API, download kits you hold.",
    no_args_is_help=True,
)

JSON = typer.Option(False, "--json", help="Print the result as JSON.")


def _dollars(cents: int | None) -> str:
    return "-" if cents is None else f"${cents // 100:,}.{cents % 100:02d}"


@app.command("migrate")
def migrate_command(as_json: bool = JSON) -> None:
    """Apply every database migration (also done on every start) and print the revision."""
    revision = operator.migrate_store(load_settings())
    if as_json:
        print_json({"ok": True, "revision": revision})
        return
    stdout.print(f"store at revision {revision}")


@app.command("publish")
def publish_command(
    package_dir: Path = typer.Argument(..., help="Package directory (holds package.yaml)."),
    key: Path = typer.Option(..., "--key", help="Private signing key (mode 0600)."),
    as_json: bool = JSON,
) -> None:
    """Check the package (refused on any claim-rule violation), build and sign its kit,
    store the kit content-addressed under SERVEKIT_HOME and record the version for sale.

    Re-publishing the same version with the same bytes changes nothing; with other bytes
    it is refused (exit 32): a changed package is a new version.
    """
    result = operator.publish_package(load_settings(), package_dir, key)
    v = result.version
    if as_json:
        print_json(result.model_dump(mode="json"))
        return
    verb = "published" if result.created else "already published"
    stdout.print(f"{verb}: {plain(v.package_id)} {plain(v.version)} ({v.tier})")
    stdout.print(
        f"price:        {_dollars(v.price_cents)}; maintenance {_dollars(v.maintenance_cents)}/year"
    )
    stdout.print(f"licence:      {plain(v.licence_name)} sha256:{v.licence_sha256}")
    stdout.print(f"signed licence required: {'yes' if v.licence_required else 'no'}")
    stdout.print(f"kit:          sha256:{v.kit_sha256} ({v.kit_bytes} bytes)")


@app.command("retract")
def retract_command(
    package_id: str = typer.Argument(..., help="Package id."),
    version: str = typer.Argument(..., help="Version to retract."),
    reason: str = typer.Option(..., "--reason", metavar="REASON", help="Why; shown to holders."),
    as_json: bool = JSON,
) -> None:
    """Hide a version from sale; workspaces that hold it keep it, marked retracted."""
    v = operator.retract_version(load_settings(), package_id, version, reason)
    if as_json:
        print_json(v.model_dump(mode="json"))
        return
    stdout.print(
        f"retracted {plain(v.package_id)} {plain(v.version)}: {plain(v.retract_reason or '')}"
    )


@app.command("list")
def list_command(as_json: bool = JSON) -> None:
    """List every published version with its price, tier and whether it is retracted."""
    versions = operator.list_versions(load_settings())
    if as_json:
        print_json([v.model_dump(mode="json") for v in versions])
        return
    for v in versions:
        flag = " (retracted)" if v.retracted else ""
        stdout.print(
            f"{plain(v.package_id)} {plain(v.version)}  {v.tier}  {_dollars(v.price_cents)}{flag}"
        )


@app.command("audit")
def audit_command(as_json: bool = JSON) -> None:
    """Recompute the licence signature chain and every ledger sum; report the first break.

    Exits 0 when both hold, 37 (naming the first break) when not.
    """
    report = operator.audit_store(load_settings())
    if as_json:
        print_json(report.model_dump(mode="json"))
        return
    stdout.print(
        f"audit ok: {report.signatures} signatures chained, "
        f"{report.entries} journal entries ({report.postings} postings) balanced"
    )


@app.command("refund")
def refund_command(
    order_id: int = typer.Argument(..., help="Order id."),
    reason: str = typer.Option(
        ..., "--reason", metavar="REASON", help="Why; recorded on the entitlement."
    ),
    amount_cents: int | None = typer.Option(
        None,
        "--amount-cents",
        metavar="CENTS",
        help="Refund this much of what is left (a partial refund keeps the entitlement); "
        "default: all that is left.",
    ),
    as_json: bool = JSON,
) -> None:
    """Refund an order (all, or --amount-cents of it): reverse that much, queue the provider
    refund, and revoke the entitlement once the order is refunded in full."""
    from servekit.store.models import OrderStatus

    order = operator.refund(load_settings(), order_id, reason, amount_cents=amount_cents)
    if as_json:
        print_json(order.model_dump(mode="json"))
        return
    held = "revoked" if order.status is OrderStatus.REFUNDED else "kept"
    stdout.print(
        f"refunded order {order.id}: {_dollars(order.refunded_cents)} of "
        f"{_dollars(order.amount_cents)} ({plain(order.package_id)}); entitlement {held}"
    )


@app.command("add-user")
def add_user_command(
    email: str = typer.Argument(..., help="Email address (the login)."),
    password_stdin: bool = typer.Option(
        False, "--password-stdin", help="Read the password from stdin."
    ),
    as_json: bool = JSON,
) -> None:
    """Create a user; the password is prompted for (or read from stdin), hashed with argon2."""
    if password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    else:
        password = typer.prompt("password", hide_input=True, confirmation_prompt=True)
    user_id = operator.add_user(load_settings(), email, password)
    if as_json:
        print_json({"ok": True, "user_id": user_id, "email": email})
        return
    stdout.print(f"user {user_id}: {plain(email)}")


@app.command("add-workspace")
def add_workspace_command(
    slug: str = typer.Argument(..., help="Workspace slug (lower case, digits, '-')."),
    owner: str = typer.Option(..., "--owner", metavar="EMAIL", help="Email of the owning user."),
    name: str = typer.Option("", "--name", help="Display name (default: the slug)."),
    as_json: bool = JSON,
) -> None:
    """Create a workspace owned by a user."""
    workspace_id = operator.add_workspace(load_settings(), slug, name or slug, owner)
    if as_json:
        data = {"workspace_id": workspace_id, "slug": slug, "name": name or slug, "owner": owner}
        print_json({"ok": True, **data})
        return
    stdout.print(f"workspace {plain(slug)} owned by {plain(owner)}")


@app.command("add-member")
def add_member_command(
    slug: str = typer.Argument(..., help="Workspace slug."),
    email: str = typer.Argument(..., help="Email of the user."),
    role: RoleName = typer.Option("member", "--role", help="owner, buyer or member."),
    as_json: bool = JSON,
) -> None:
    """Add a user to a workspace (or change their role): buyers may buy, members download."""
    from servekit.store.models import Role

    operator.add_member(load_settings(), slug, email, Role(role))
    if as_json:
        print_json({"ok": True, "workspace": slug, "email": email, "role": role})
        return
    stdout.print(f"{plain(email)} is {role} of {plain(slug)}")


@app.command("add-token")
def add_token_command(
    slug: str = typer.Argument(..., help="Workspace slug."),
    email: str = typer.Argument(..., help="Email of the member the token acts for."),
    name: str = typer.Option("cli", "--name", help="A name to recognise the token by."),
    as_json: bool = JSON,
) -> None:
    """Create an API token for downloads; it is printed once and stored only as a hash."""
    token = operator.add_token(load_settings(), slug, email, name)
    if as_json:
        print_json(token.model_dump(mode="json"))
        return
    stdout.print(f"token {token.id} for {plain(email)} in {plain(slug)} (shown once):")
    stdout.print(token.token)


@app.command("erase-signer")
def erase_signer_command(
    signature_id: int = typer.Argument(..., help="Signature id."), as_json: bool = JSON
) -> None:
    """Erase a licence signer's personal data (name, title, IP, user agent); the chain stays valid."""
    operator.erase_signer(load_settings(), signature_id)
    if as_json:
        print_json({"ok": True, "signature_id": signature_id, "erased": True})
        return
    stdout.print(f"erased the personal data of signature {signature_id}")


@app.command("send-outbox")
def send_outbox_command(as_json: bool = JSON) -> None:
    """Send pending provider side effects (refunds) recorded by past transactions, once each."""
    sent = operator.send_outbox(load_settings())
    if as_json:
        print_json({"ok": True, "sent": sent})
        return
    stdout.print(f"sent {sent} outbox messages")


@app.command("renew-due")
def renew_due_command(as_json: bool = JSON) -> None:
    """Renew every maintenance subscription whose period has ended (run it daily).

    Cancelled ones end; the others are charged off-session through the payment provider
    at the price agreed at checkout: paid, they run another year; refused, they end.
    Versions released while a subscription ran stay downloadable after it ends.
    """
    done = operator.renew_due(load_settings())
    if as_json:
        print_json([r.model_dump(mode="json") for r in done])
        return
    for r in done:
        until = f" until {r.period_end:%Y-%m-%d}" if r.period_end else ""
        stdout.print(
            f"subscription {r.subscription_id} ({plain(r.package_id)}): {r.outcome.value}"
            f"{until}; {plain(r.detail)}"
        )
    stdout.print(f"{len(done)} subscription(s) handled")


@app.command("serve")
def serve_command(
    host: str = typer.Option("127.0.0.1", "--host", metavar="ADDRESS", help="Address to bind."),
    port: int = typer.Option(
        8000, "--port", min=0, max=65535, metavar="PORT", help="Port to bind (0: any free port)."
    ),
) -> None:
    """Serve the store's JSON API (/api/v1, OpenAPI at /api/v1/openapi.json) with uvicorn."""
    import uvicorn

    from servekit.web.api.app import context_from_settings, create_api_app

    uvicorn.run(create_api_app(context_from_settings(load_settings())), host=host, port=port)


@app.command("download")
def download_command(
    ref: str = typer.Argument(..., help="ID or ID@VERSION (no version: the latest you hold)."),
    url: str = typer.Option(..., "--url", help="The store's base URL, e.g. http://127.0.0.1:8000."),
    token: str = typer.Option(
        ..., "--token", metavar="TOKEN", help="An API token of your workspace."
    ),
    out: Path = typer.Option(..., "--out", "-o", metavar="KIT", help="Where to write KIT.tar.gz."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing --out file."),
    as_json: bool = JSON,
) -> None:
    """Download a kit your workspace holds, check its sha256, and write it; then run
    `servekit verify kit` on it offline.
    """
    if "/" in ref:
        raise UsageError(f"{ref!r} is not ID or ID@VERSION", hint="e.g. kimi-k3-8xb300@1.0.0")
    from servekit.seams import output_file, parse_url
    from servekit.store.client import download_kit

    output_file(out, force=force, option="--out")
    got = download_kit(parse_url(url, "--url"), token, ref, out)
    if as_json:
        print_json(got.model_dump(mode="json"))
        return
    stdout.print(
        f"wrote {plain(got.path)}: {plain(got.package_id)} {plain(got.version)}, {got.bytes} bytes"
    )
    stdout.print(f"sha256:      {got.sha256}")
    stdout.print(f"next:        servekit trust fetch {plain(url)} -o trust.toml")
    stdout.print(
        "             (it prints the store's key id: compare it with one you got another way)"
    )
    stdout.print(f"then:        servekit verify kit {plain(got.path)} --trust trust.toml")
