"""Docs are tested: every CLI command, setting, error class and claim rule is documented."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest
import typer.main
from typer.core import TyperGroup

from servekit import errors
from servekit.cli.main import app
from servekit.config import ENV_PREFIX, Settings
from servekit.package.rules import RULES

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def _commands(group: object, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    out = []
    if isinstance(group, TyperGroup):
        for name, cmd in group.commands.items():
            out.append((*prefix, name))
            out.extend(_commands(cmd, (*prefix, name)))
    return out


COMMANDS = _commands(typer.main.get_command(app))


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p))
def test_every_command_is_documented(path: tuple[str, ...]) -> None:
    text = (DOCS / "cli.md").read_text()
    assert f"servekit {' '.join(path)}" in text, f"add `servekit {' '.join(path)}` to docs/cli.md"


@pytest.mark.parametrize("path", COMMANDS, ids=lambda p: " ".join(p))
def test_every_command_has_help(path: tuple[str, ...]) -> None:
    cmd = typer.main.get_command(app)
    for part in path:
        assert isinstance(cmd, TyperGroup)
        cmd = cmd.commands[part]
    assert cmd.help and len(cmd.help.strip()) > 20, f"{' '.join(path)} needs a helpful docstring"


def test_every_setting_is_documented() -> None:
    text = (DOCS / "settings.md").read_text()
    for name in Settings.model_fields:
        assert f"{ENV_PREFIX}{name.upper()}" in text


def test_every_error_class_is_documented() -> None:
    text = (DOCS / "errors.md").read_text()
    for name, obj in inspect.getmembers(errors, inspect.isclass):
        if issubclass(obj, errors.Error):
            assert re.search(rf"`{name}`", text), f"document {name} in docs/errors.md"


def test_every_claim_rule_is_documented() -> None:
    text = (DOCS / "rules.md").read_text()
    for rule in RULES.values():
        assert f"{rule.id}" in text and rule.name in text, f"document {rule.id} in docs/rules.md"
