"""``servekit verify``: check a kit (manifest, signature, subjects) or downloaded weights.

Every check raises a specific :class:`~servekit.errors.VerificationError`; the exit
code names the failure class (see docs/cli.md). Nothing passes silently.

Each subcommand is imported only when it runs: ``verify weights`` on a pin file starts
without the kit's verifier, the claim rules or the feed (tests/cli/test_startup.py).
"""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperGroup

from servekit.cli.main import LazyCommands, command_of

SUBCOMMANDS = {
    "kit": "servekit.cli.verify_kit:kit_command",
    "weights": "servekit.cli.verify_weights:weights_command",
    "reproduction": "servekit.cli.replay:reproduction_command",
}


def _load(name: str) -> Any:
    return command_of(SUBCOMMANDS[name], name)


class _LazyVerify(TyperGroup):
    """The verify group: lists its subcommands by name, imports the one asked for."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands = LazyCommands(self.commands, SUBCOMMANDS, _load)

    def list_commands(self, ctx: Any) -> list[str]:
        return list(SUBCOMMANDS)


app = typer.Typer(
    cls=_LazyVerify,
    help="Verify a kit or a model's weights. Exit 0 means verified; every failure names "
    "the file, the expected and the actual value.",
    no_args_is_help=True,
)
