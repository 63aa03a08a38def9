"""The ``servekit`` command: global options, command groups, and the one error renderer."""

from __future__ import annotations

import sys
import traceback

import typer
from rich.markup import escape

import servekit.cli.feed as feed_cli
from servekit import __version__, progress
from servekit.cli import bench, catalog, demo, fit, keys, kit, model, package, serve, sim, verify
from servekit.cli import store as store_cli
from servekit.cli.output import stderr
from servekit.config import load_settings
from servekit.errors import Error

app = typer.Typer(
    name="servekit",
    help=(
        "Verified serving recipes: pin an engine build and an upstream model, measure, "
        "check every claim against raw evidence, sign a receipt, build a kit anyone can verify."
    ),
    epilog=(
        "Publisher: servekit bench run -> servekit package check -> servekit kit build. "
        "Buyer: servekit verify kit, then servekit verify weights --kit. "
        "Every command takes --help; docs/cli.md lists them all, docs/errors.md the exit codes."
    ),
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode="rich",
    context_settings={"help_option_names": ["-h", "--help"]},
)
app.add_typer(package.app, name="package")
app.add_typer(catalog.app, name="catalog")
app.add_typer(keys.app, name="keys")
app.add_typer(kit.app, name="kit")
app.add_typer(verify.app, name="verify")
app.add_typer(model.app, name="model")
app.add_typer(bench.app, name="bench")
app.add_typer(sim.app, name="sim")
app.add_typer(feed_cli.app, name="feed")
app.add_typer(store_cli.app, name="store")
app.command("demo")(demo.demo)
app.command("fit")(fit.fit)
app.command("serve")(serve.serve)

_state = {"verbose": False}


def _version(value: bool) -> None:
    if value:
        typer.echo(f"servekit {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="Show the full traceback when a command fails."
    ),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="Never draw progress bars."),
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
) -> None:
    """Global options apply to every command."""
    _state["verbose"] = verbose
    progress.set_enabled(not quiet and load_settings().progress)


def _render(exc: Error) -> int:
    stderr.print(f"[bold red]error:[/] {escape(exc.message)}")
    if exc.hint:
        stderr.print(f"[yellow]hint:[/] {escape(exc.hint)}")
    return exc.exit_code


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; maps every servekit error to its exit code."""
    try:
        app(args=argv, prog_name="servekit")
    except SystemExit as exc:  # click's standalone mode: usage errors, --help, typer.Exit
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except Error as exc:
        if _state["verbose"]:
            traceback.print_exc()
        return _render(exc)
    except Exception:
        traceback.print_exc()
        stderr.print("error: unexpected internal error; please report it with the traceback above")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
