"""``servekit serve``: the catalog web app, run by uvicorn in the foreground."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from servekit.cli.output import plain, stderr, stdout
from servekit.errors import ServeError

if TYPE_CHECKING:  # the web app loads when it is served, not for --help
    from servekit.config import Settings
    from servekit.web.home import Home


def _check_address(host: str, port: int) -> None:
    """Fail with a servekit error (not a uvicorn traceback) when the port is taken."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError as exc:
            raise ServeError(
                f"cannot listen on {host}:{port}: {exc.strerror}",
                hint="stop whatever uses that port, or pass --port",
            ) from exc


def _announce(home: Home, url: str, settings: Settings) -> None:
    from servekit.config import PasswordHashing

    if settings.password_hashing is PasswordHashing.CHEAPEST_FOR_TESTS:
        stderr.print(
            "[bold red]WARNING:[/] SERVEKIT_PASSWORD_HASHING=cheapest-for-tests: passwords "
            "are hashed at argon2's cheapest cost, for test suites only. Unset it before "
            "anyone creates a real account."
        )
    if home.key_created:
        stderr.print(
            f"[bold red]WARNING:[/] created a DEVELOPMENT publisher key in "
            f"{plain(str(home.key_dir))}. It is for development only: never sign a kit "
            "you sell with it."
        )
    for v in home.published:
        stdout.print(f"published {plain(v.package_id)} {plain(v.version)} (ok)")
    for draft in home.drafts:
        stdout.print(f"draft, shown for review and not for sale: {plain(str(draft))}")
    for refused in home.refused:
        stderr.print(
            f"[bold red]not published:[/] {plain(str(refused.directory))}: {plain(refused.reason)}"
        )
    stdout.print(f"catalog:  [bold]{url}[/]")
    stdout.print(f"api:      {url}api/v1/openapi.json")
    stdout.print(f"state:    {plain(str(home.root.resolve()))} (kits, published packages, keys)")
    stdout.print(f"database: {plain(home.database)}")
    stdout.print(f"key:      {plain(str(home.key_dir.resolve()))} (development only)")
    stdout.print("stop:     press Ctrl-C")


def serve(
    host: str = typer.Option("127.0.0.1", metavar="ADDRESS", help="Address to listen on."),
    port: int = typer.Option(8000, min=1, max=65535, metavar="PORT", help="Port to listen on."),
    packages: Path | None = typer.Option(
        None, help="Publish every package under DIR first (default: SERVEKIT_EXAMPLES_DIR)."
    ),
    workers: int = typer.Option(1, min=1, max=64, help="Worker processes (they share the home)."),
) -> None:
    """Serve the catalog web app in the foreground (state in SERVEKIT_HOME; Ctrl-C stops it)."""
    from servekit.config import load_settings
    from servekit.web.home import prepare_home
    from servekit.web.server import APP_FACTORY, SERVER_OPTIONS

    settings = load_settings()
    _check_address(host, port)
    home = prepare_home(settings, packages or settings.examples_dir)
    _announce(home, f"http://{host}:{port}/", settings)
    import uvicorn  # here, not at the top: every other command starts without it

    uvicorn.run(
        APP_FACTORY,
        factory=True,
        host=host,
        port=port,
        workers=workers,
        **SERVER_OPTIONS,
    )
