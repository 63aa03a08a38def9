"""servekit.cli.coerce converts plain values as typer's own pydantic converters do, and
leaves every other value (and every refusal's wording) to them."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer._click import Context
from typer._coercion import build_runtime_param

from servekit.cli.coerce import _NotPlainError, converter
from servekit.cli.main import COMMANDS, load_command
from tests.cli.helpers import run_cli

SAMPLES: list[Any] = [
    "8", "0", "-3", "+2", "007", "1.5", "-0.25", "1e3", "nan", "inf", "x", "", " 8",
    "65536", "70000", True, False, 3, 2.5, Path("a/b"), ["a", "b"], ("1", "2"),
]  # fmt: skip


def _params() -> Iterator[tuple[Any, Any]]:
    for name in COMMANDS:
        stack = [load_command(name)]
        while stack:
            command = stack.pop()
            stack += list(getattr(command, "commands", {}).values())
            yield from ((command, p) for p in command.params)


def test_every_plain_value_converts_as_typer_converts_it() -> None:
    checked = 0
    for command, param in _params():
        convert = converter(param.type_descriptor)
        if convert is None:
            continue
        slow = build_runtime_param(param.type_descriptor)
        ctx = Context(command)
        for value in SAMPLES:
            try:
                fast = convert(value)
            except _NotPlainError:
                continue  # typer's own converter takes it, message and all
            expected = slow._coerce_value(value, param=param, ctx=ctx)
            assert (type(fast), fast) == (type(expected), expected), (param.name, value)
            checked += 1
    assert checked > 300, checked


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["fit", "m", "--gpu", "H200", "--tp", "0"], "Invalid value for '--tp'"),
        (["fit", "m", "--gpu", "H200", "--tp", "two"], "Invalid value for '--tp'"),
        (["sim", "serve", "--port", "70000"], "Invalid value for '--port'"),
        (["fit", "m", "--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization"),
    ],
)
def test_a_refused_value_is_worded_by_typer(argv: list[str], message: str) -> None:
    code, _, err = run_cli(argv)
    assert code == 2 and message in err, err


def _descriptor(annotation: Any, **info: Any) -> Any:
    from typer._coercion import resolve_type_descriptor
    from typer.models import ParameterInfo

    return resolve_type_descriptor(annotation, ParameterInfo(**info))


@pytest.mark.parametrize(
    ("annotation", "info"),
    [
        (Path, {"exists": True}),  # typer checks the file: its converter runs
        (Path, {"resolve_path": True}),
        (list[dt.datetime], {}),
        (dt.datetime, {"formats": ["%Y"]}),
        (int, {"parser": int}),
    ],
    ids=str,
)
def test_values_that_need_typers_checks_get_typers_converter(annotation: Any, info: Any) -> None:
    assert converter(_descriptor(annotation, **info)) is None


def test_a_list_of_plain_values_converts_item_by_item() -> None:
    convert = converter(_descriptor(list[Path]))
    assert convert is not None and convert(("a", "b/c")) == [Path("a"), Path("b/c")]
    with pytest.raises(_NotPlainError):
        convert("a")  # typer's converter wraps a lone value
