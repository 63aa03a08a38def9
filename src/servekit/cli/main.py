"""The ``servekit`` command: global options, command groups, and the one error renderer."""

from __future__ import annotations

import sys
import traceback

import typer
from rich.markup import escape

import servekit.cli.feed as feed_cli
from servekit import __version__, progress
from servekit.cli import (
    bench,
    catalog,
    demo,
    fit,
    keys,
    kit,
    model,
    output,
    package,
    serve,
    sim,
    verify,
)
from servekit.cli.output import error_json, json_emitted, print_json, stderr
from servekit.config import load_settings
from servekit.errors import Error, UsageError, printable

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
app.command("demo")(demo.demo)
app.command("fit")(fit.fit)
app.command("serve")(serve.serve)

_state = {"verbose": False}
INTERRUPTED = 130


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


def _render(exc: Error, *, as_json: bool) -> int:
    """The one place a servekit error reaches the user: stderr, and stdout with --json."""
    stderr.print(f"[bold red]error:[/] {escape(printable(exc.message))}")
    if exc.hint:
        stderr.print(f"[yellow]hint:[/] {escape(printable(exc.hint))}")
    if as_json and not json_emitted():
        print_json(error_json(exc))
    return exc.exit_code


def _usage(exc: typer.TyperException, *, as_json: bool) -> int:
    """A usage error (unknown option, missing argument, bad value) as a servekit one."""
    code = int(getattr(exc, "exit_code", UsageError.exit_code))
    ctx = getattr(exc, "ctx", None)
    if not exc.format_message():  # no arguments: the help was printed, nothing went wrong
        return code
    if ctx is not None:
        stderr.print(escape(ctx.get_usage()))
    stderr.print(f"[bold red]error:[/] {escape(printable(exc.format_message()))}")
    command = ctx.command_path if ctx is not None else "servekit"
    stderr.print(f"[yellow]hint:[/] {escape(command)} --help lists every option")
    if as_json and not json_emitted():
        print_json(error_json(UsageError(exc.format_message())) | {"exit_code": code})
    return code


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; maps every servekit error to its exit code.

    Exit 1 is left for bugs only: a servekit error exits with its class's code, a usage
    error with 2, an interrupt with 130 (docs/errors.md).
    """
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    output.start()
    try:
        code = app(args=args, prog_name="servekit", standalone_mode=False)
    except typer.TyperException as exc:
        return _usage(exc, as_json=as_json)
    except (typer.Abort, KeyboardInterrupt):
        stderr.print("interrupted")
        return INTERRUPTED
    except SystemExit as exc:
        code = exc.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except Error as exc:
        if _state["verbose"]:
            traceback.print_exc()
        return _render(exc, as_json=as_json)
    except Exception:
        traceback.print_exc()
        stderr.print("error: unexpected internal error; please report it with the traceback above")
        return 1
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
