from __future__ import annotations

import sys
from pathlib import Path

import pytest

from servekit import progress
from servekit.cli.main import main
from servekit.config import load_settings
from servekit.errors import UsageError


def test_defaults() -> None:
    settings = load_settings({})
    assert settings.progress is True
    assert settings.examples_dir == Path("examples/packages")


def test_values_come_from_servekit_variables() -> None:
    settings = load_settings({"SERVEKIT_PROGRESS": "0", "SERVEKIT_EXAMPLES_DIR": "/x"})
    assert settings.progress is False and settings.examples_dir == Path("/x")


def test_a_bad_value_names_the_variable() -> None:
    with pytest.raises(UsageError, match="SERVEKIT_PROGRESS") as info:
        load_settings({"SERVEKIT_PROGRESS": "sometimes"})
    assert info.value.exit_code == 2


@pytest.mark.parametrize(("env", "args", "enabled"), [
    ({}, ["package", "rules"], True),
    ({"SERVEKIT_PROGRESS": "false"}, ["package", "rules"], False),
    ({}, ["--quiet", "package", "rules"], False),
])  # fmt: skip
def test_the_cli_applies_progress_settings(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], args: list[str], enabled: bool
) -> None:
    monkeypatch.delenv("SERVEKIT_PROGRESS", raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert main(args) == 0
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)  # a terminal, where bars are drawn
    assert progress.is_enabled() is enabled
    progress.set_enabled(True)
