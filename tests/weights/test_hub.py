"""The Hub client's cache location."""

from __future__ import annotations

from pathlib import Path

import pytest
from huggingface_hub import constants  # imported first, as in a long-lived process

from servekit.weights.hub import hub_cache


def test_the_cache_follows_the_environment_after_huggingface_hub_is_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert constants.HF_HUB_CACHE  # read once, at its import
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    assert hub_cache() == tmp_path / "home" / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "cache"))
    assert hub_cache() == tmp_path / "cache"  # HF_HUB_CACHE wins, as in huggingface_hub
