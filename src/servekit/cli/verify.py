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

SUBCOMMANDS = {
    "kit": "servekit.cli.verify_kit:kit_command",
    "weights": "servekit.cli.verify_weights:weights_command",
    "reproduction": "servekit.cli.replay:reproduction_command",
}


class _LazyVerify(TyperGroup):
    """The verify group: lists its subcommands by name, imports the one asked for."""

    def list_commands(self, ctx: Any) -> list[str]:
        return list(SUBCOMMANDS)

    def get_command(self, ctx: Any, cmd_name: str) -> Any:
        if cmd_name not in SUBCOMMANDS:
            return None
        if cmd_name not in self.commands:
            from servekit.cli.main import command_of

            self.commands[cmd_name] = command_of(SUBCOMMANDS[cmd_name], cmd_name)
        return self.commands[cmd_name]


app = typer.Typer(
    cls=_LazyVerify,
    help="Verify a kit or a model's weights. Exit 0 means verified; every failure names "
    "the file, the expected and the actual value.",
    no_args_is_help=True,
)
