"""`make run`'s job: check, sign, build and verify every example, export the catalog."""

from __future__ import annotations

from pathlib import Path

from servekit.receipts.keys import load_trust_store
from servekit.verify.kit import verify_kit
from tests.functional.helpers import ROOT, servekit


def test_demo_builds_and_verifies_a_kit_per_example(tmp_path: Path) -> None:
    result = servekit("demo", "--out", str(tmp_path))
    assert result.returncode == 0, result.stdout + result.stderr
    examples = sorted(
        p.parent.name for p in (ROOT / "examples" / "packages").glob("*/package.yaml")
    )
    kits = sorted((tmp_path / "kits").glob("*.tar.gz"))
    assert [k.name.rsplit("-", 1)[0] for k in kits] == examples
    trust = load_trust_store(tmp_path / "keys" / "servekit.pub")
    assert all(verify_kit(kit, trust).package_id in examples for kit in kits)
    assert (tmp_path / "catalog" / "index.html").is_file()
    assert result.stdout.count("signature and manifest verified") == len(examples)


def test_demo_twice_replaces_its_throwaway_key(tmp_path: Path) -> None:
    assert servekit("demo", "--out", str(tmp_path)).returncode == 0
    first = (tmp_path / "keys" / "servekit.pub").read_bytes()
    assert servekit("demo", "--out", str(tmp_path)).returncode == 0
    assert (tmp_path / "keys" / "servekit.pub").read_bytes() != first
