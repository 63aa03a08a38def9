"""The pin: the package's file list recomputes to its tree digest."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from servekit.package.rules.pin import listing_digest
from tests.package.rules.helpers import Definition, fired

FILES = [{"path": "model.safetensors", "size": 296, "sha256": hashlib.sha256(b"w").hexdigest()},
         {"path": "config.json", "size": 4, "sha256": hashlib.sha256(b"c").hexdigest()}]  # fmt: skip


def _pinned(tmp_path: Path, digest: str, total: int = 300) -> set[str]:
    def mutate(d: Definition) -> None:
        d["model"].update(files="model-pin.json", tree_digest=digest, total_bytes=total)

    tmp_path.mkdir(parents=True, exist_ok=True)
    (tmp_path / "model-pin.json").write_text(json.dumps({"files": FILES}))
    return fired(tmp_path, mutate)


def test_sk133_true_pin_passes(tmp_path: Path) -> None:
    assert "SK133" not in _pinned(tmp_path, listing_digest(FILES))


def test_sk133_digest_that_is_not_the_file_list(tmp_path: Path) -> None:
    assert "SK133" in _pinned(tmp_path, "sha256:" + "b" * 64)


def test_sk133_total_bytes_that_is_not_the_file_list(tmp_path: Path) -> None:
    assert "SK133" in _pinned(tmp_path, listing_digest(FILES), total=1)


def test_listing_digest_matches_the_tiny_sim_example() -> None:
    root = Path(__file__).parents[3] / "examples/packages/tiny-sim"
    pin = json.loads((root / "model-pin.json").read_text())
    assert listing_digest(pin["files"]) == pin["tree_digest"]


def test_sk133_measured_package_with_its_pin_file_removed(tmp_path: Path) -> None:
    """The file list dropped rather than corrected: nothing is left to recompute."""
    assert "SK133" in fired(tmp_path, lambda d: d["model"].pop("files"))
