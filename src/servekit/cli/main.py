"""The ``servekit`` command: global options, command groups, and the one error renderer."""

from __future__ import annotations

import importlib
import json
import sys
import traceback
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any

import typer
import typer.main
from typer._click.exceptions import NoArgsIsHelpError  # typer vendors click
from typer.core import TyperCommand, TyperGroup

from servekit.errors import Error, UsageError, printable

# name -> (module:attribute, summary for `servekit --help`). Each group is imported only
# when it runs (or its own --help is asked for): `servekit --help` and a command that
# fails on its arguments start without numpy, httpx or the models of other groups.
# tests/cli/test_startup.py checks each summary against the loaded command's help.
COMMANDS: dict[str, tuple[str, str]] = {
    "package": ("servekit.cli.package:app", "Work with a package definition: check its claims, print its schema."),
    "catalog": ("servekit.cli.catalog:app", "Catalog cards and pages, read from package definitions (nothing typed twice)."),
    "keys": ("servekit.cli.keys:app", "Ed25519 keys that sign receipts: generate a pair, show a key's id."),
    "trust": ("servekit.cli.trust:app", "Trust files: fetch a store's signing keys with their publisher grants."),
    "kit": ("servekit.cli.kit:app", "Build a kit: deploy files written flag for flag from the package, evidence, licences and a signed receipt; unpack one only after verifying it."),
    "verify": ("servekit.cli.verify:app", "Verify a kit or a model's weights. Exit 0 means verified; every failure names the file, the expected and the actual value."),
    "model": ("servekit.cli.model:app", "Pin an upstream model at an immutable commit, or digest a local model tree (every file's path, size and sha256, and the tree digest: docs/digest.md)."),
    "bench": ("servekit.cli.bench:app", "Benchmark an OpenAI-compatible endpoint into raw evidence, and summarize it."),
    "sim": ("servekit.cli.sim:app", "The engine simulator: exact, configurable timing for tests and demos. Results measured against it are labelled simulator results everywhere."),
    "feed": ("servekit.cli.feed:app", "The publisher's revocation feed: revoked versions, retracted figures, bad builds."),
    "demo": ("servekit.cli.demo:demo", "Check every example package, build and verify its signed kit, export the catalog."),
    "fit": ("servekit.cli.fit:fit", "Predict whether a model fits GPUs: weights per GPU, KV cache, verdict and margin."),
    "serve": ("servekit.cli.serve:serve", "Serve the catalog web app in the foreground (state in SERVEKIT_HOME; Ctrl-C stops it)."),
    "tune": ("servekit.cli.tune:tune", "Find a faster engine configuration for a workload: search, then confirm against stock in fresh runs; writes a draft package."),
    "store": ("servekit.cli.store:app", "The store: publish and retract versions, audit the ledger and licence chain, manage accounts, serve the JSON API, download kits you hold."),
}  # fmt: skip


def load_command(name: str) -> Any:
    """The click command Typer builds for the group or command ``name`` (imports it)."""
    return command_of(COMMANDS[name][0], name)


def command_of(where: str, name: str) -> Any:
    """The click command named ``name`` for the Typer app or function at ``module:attribute``
    (imports it); a group's lazily loaded subcommands come through here too."""
    module, _, attribute = where.partition(":")
    target = getattr(importlib.import_module(module), attribute)
    if isinstance(target, typer.Typer):
        target.rich_markup_mode = None  # plain help: wraps, never cuts a word to "…"
        command: Any = typer.main.get_group(target)
    else:
        single = typer.Typer(rich_markup_mode=None, add_completion=False)
        single.command(name)(target)
        command = typer.main.get_command(single)
    command.name = name
    _name_values(command)
    return command


_TYPE_METAVARS = {int: "N", float: "NUMBER"}


def _metavar(param: Any) -> str | None:
    """What a value is, for --help: the argument's own name (``PACKAGE_DIR``), ``N`` for a
    count, ``NUMBER``, ``PATH``, or the option's name (``--url URL``) — never ``<str>``."""
    if getattr(param, "is_flag", False) or param.metavar is not None:
        return None
    described = getattr(param, "type_descriptor", None)
    if described is None or described.is_choice:  # choices already list their values
        return None
    if param.param_type_name == "argument":
        return str(param.name).upper()
    if described.is_path:
        return "PATH"
    if described.annotation in _TYPE_METAVARS:
        return str(_TYPE_METAVARS[described.annotation])
    longest: str = max(param.opts, key=len)
    return longest.lstrip("-").replace("-", "_").upper()


def _name_values(command: Any) -> None:
    """Give every parameter of ``command`` (and of its loaded subcommands) a metavar; a lazy
    group's subcommand gets them when it loads (``command_of``)."""
    for sub in dict.values(getattr(command, "commands", {})):  # never loads a lazy one
        if sub is not None:
            _name_values(sub)
    for param in command.params:
        param.metavar = _metavar(param) or param.metavar


class LazyCommands(dict[str, Any]):
    """A group's commands, each imported on first access (keys are there from the start):
    the root's, and ``servekit.cli.verify``'s subcommands."""

    def __init__(
        self, eager: Mapping[str, Any], names: Iterable[str], load: Callable[[str], Any]
    ) -> None:
        super().__init__(eager)
        for name in names:
            self.setdefault(name, None)
        self._load_command = load

    def loaded(self, name: str) -> bool:
        return super().get(name) is not None

    def _load(self, name: str) -> Any:
        value = super().get(name)
        if value is None and name in self:
            value = self._load_command(name)
            super().__setitem__(name, value)
        return value

    def __getitem__(self, name: str) -> Any:
        if name not in self:
            raise KeyError(name)
        return self._load(name)

    def get(self, name: str, default: Any = None) -> Any:
        return self._load(name) if name in self else default

    def items(self) -> Iterator[tuple[str, Any]]:  # type: ignore[override]
        return iter([(name, self._load(name)) for name in self])

    def values(self) -> Iterator[Any]:  # type: ignore[override]
        return iter([self._load(name) for name in self])


class _LazyRoot(TyperGroup):
    """The root group: lists every command, imports one only to run it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        eager: Mapping[str, Any] = self.commands
        self.lazy = LazyCommands(eager, COMMANDS, load_command)
        self.commands = self.lazy
        self._listing = False
        self._invoked: str | None = None

    def list_commands(self, ctx: Any) -> list[str]:
        return list(self.lazy)  # names only: nothing is imported to list them

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if self._listing and cmd_name in COMMANDS and not self.lazy.loaded(cmd_name):
            return TyperCommand(name=cmd_name, short_help=COMMANDS[cmd_name][1])
        return super().get_command(ctx, cmd_name)

    def resolve_command(self, ctx: Any, args: list[str]) -> Any:
        self._invoked = args[0] if args else None
        return super().resolve_command(ctx, args)

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except ModuleNotFoundError as exc:  # a library of an extra that is not installed
            from servekit.cli.extras import missing_extra

            error = missing_extra(exc, self._invoked)
            if error is None:
                raise
            raise error from exc

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self._listing = True  # the listing needs each summary, not each module
        try:
            super().format_help(ctx, formatter)
        finally:
            self._listing = False


app = typer.Typer(
    name="servekit",
    cls=_LazyRoot,
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
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)

_state = {"verbose": False}
INTERRUPTED = 130


def _version(value: bool) -> None:
    if value:
        from servekit import __version__

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
    from servekit import progress

    _state["verbose"] = verbose
    progress.set_enabled(False if quiet else None)  # the settings decide at the first bar


def _render(exc: Error, *, as_json: bool) -> int:
    """The one place a servekit error reaches the user: stderr, and stdout with --json."""
    from servekit.cli.output import error_json, json_emitted, print_error, print_json

    print_error(exc)
    if as_json and not json_emitted():
        print_json(error_json(exc))
    return exc.exit_code


def _usage(exc: typer.TyperException, *, as_json: bool, emitted: bool) -> int:
    """A usage error (unknown option, missing argument, bad value) as a servekit one.

    Plain text, without rich: this path must start fast (docs/performance.md).
    """
    code = int(getattr(exc, "exit_code", UsageError.exit_code))
    if isinstance(exc, NoArgsIsHelpError):  # bare `servekit` or a bare group: its help
        sys.stdout.write(exc.ctx.get_help() + "\n")
        return 0
    message = exc.format_message()
    ctx = getattr(exc, "ctx", None)
    lines = [ctx.get_usage()] if ctx is not None else []
    command = ctx.command_path if ctx is not None else "servekit"
    lines += [f"error: {printable(message)}", f"hint: {command} --help lists every option"]
    sys.stderr.write("\n".join(lines) + "\n")
    if as_json and not emitted:
        hint = f"{command} --help lists every option"
        data = {"ok": False, "error": "UsageError", "exit_code": code, "message": message}
        sys.stdout.write(json.dumps({**data, "hint": hint}, indent=2) + "\n")
    return code


def _emitted() -> bool:
    output = sys.modules.get("servekit.cli.output")
    return bool(output is not None and output.json_emitted())


def main(argv: list[str] | None = None) -> int:
    """Entry point of the console script; maps every servekit error to its exit code.

    Exit 1 is left for bugs only: a servekit error exits with its class's code, a usage
    error with 2, an interrupt with 130 (docs/errors.md).
    """
    from servekit.cli.coerce import install

    install()  # plain values without pydantic: fast --help and argument errors
    args = list(sys.argv[1:] if argv is None else argv)
    as_json = "--json" in args
    if "servekit.cli.output" in sys.modules:
        sys.modules["servekit.cli.output"].start()
    try:
        code = app(args=args, prog_name="servekit", standalone_mode=False)
    except typer.TyperException as exc:
        return _usage(exc, as_json=as_json, emitted=_emitted())
    except (typer.Abort, KeyboardInterrupt):
        sys.stderr.write("interrupted\n")
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
        sys.stderr.write(
            "error: unexpected internal error; please report it with the traceback above\n"
        )
        return 1
    return code if isinstance(code, int) else 0


if __name__ == "__main__":
    sys.exit(main())
