"""``servekit verify``: check a kit (manifest, signature, subjects) or downloaded weights.

Every check raises a specific :class:`~servekit.errors.VerificationError`; the exit
code names the failure class (see docs/cli.md). Nothing passes silently.
"""

from __future__ import annotations

import typer

from servekit.cli.replay import reproduction_command
from servekit.cli.verify_kit import kit_command
from servekit.cli.verify_weights import weights_command

app = typer.Typer(
    help="Verify a kit or a model's weights. Exit 0 means verified; every failure names "
    "the file, the expected and the actual value.",
    no_args_is_help=True,
)
app.command("kit")(kit_command)
app.command("weights")(weights_command)
app.command("reproduction")(reproduction_command)
