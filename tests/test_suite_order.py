"""The suite's own scheduling: the long modules tests/conftest.py hands out first exist."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import LONG_FIRST

ROOT = Path(__file__).resolve().parents[1]


def test_every_module_sent_first_exists() -> None:
    assert [m for m in LONG_FIRST if not (ROOT / m).is_file()] == []
    assert len(set(LONG_FIRST)) == len(LONG_FIRST)
