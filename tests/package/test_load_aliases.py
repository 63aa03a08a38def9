"""package.yaml refuses YAML anchors and aliases: a few hundred bytes cannot become gigabytes."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from servekit.errors import PackageFileError
from servekit.package.load import parse_package

LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, *{chr(97 + i)}, "
    f"*{chr(97 + i)}]\n"
    for i in range(9)
)


def test_an_alias_bomb_is_refused_at_once() -> None:
    """9**10 (3.4 billion) leaves from 600 bytes; refused at the first anchor."""
    start = time.perf_counter()
    with pytest.raises(PackageFileError, match="anchor 'a' is not allowed") as info:
        parse_package(Path("package.yaml"), LAUGHS)
    assert time.perf_counter() - start < 1.0
    assert info.value.line == 1


@pytest.mark.parametrize(
    ("text", "message", "line"),
    [
        ("id: &name tiny\nname: x\n", "anchor 'name'", 1),
        ("id: tiny\nsummary: x\nname: *x\n", "alias", 3),
    ],
)
def test_anchors_and_aliases_are_refused(text: str, message: str, line: int) -> None:
    with pytest.raises(PackageFileError, match=message) as info:
        parse_package(Path("package.yaml"), text)
    assert info.value.line == line


def test_deep_nesting_is_refused_without_a_traceback() -> None:
    deep = "a: " + "[" * 5000 + "]" * 5000 + "\n"
    with pytest.raises(PackageFileError, match="nested too deeply"):
        parse_package(Path("package.yaml"), deep)


def test_duplicate_keys_are_found_at_depth() -> None:
    deep = "a: " + "[" * 40 + "{k: 1, k: 2}" + "]" * 40 + "\n"
    with pytest.raises(PackageFileError, match="duplicate key 'k'"):
        parse_package(Path("package.yaml"), deep)
