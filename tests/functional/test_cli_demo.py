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
    trust = load_trust_store(tmp_path / "kits" / "demo.pub", bare_key=True)
    assert all(verify_kit(kit, trust).package_id in examples for kit in kits)
    assert (tmp_path / "catalog" / "index.html").is_file()
    assert result.stdout.count("signature and manifest verified") == len(examples)


def test_demo_never_touches_a_key_and_asks_before_writing_over_output(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.mkdir()
    (keys / "servekit.key").write_bytes(b"my real private key")
    refused = servekit("demo", "--out", str(tmp_path))
    assert refused.returncode == 2, refused.stderr
    assert "--force" in refused.stderr
    assert not (tmp_path / "kits").exists()
    assert servekit("demo", "--out", str(tmp_path), "--force").returncode == 0
    assert (keys / "servekit.key").read_bytes() == b"my real private key"
    assert sorted(p.name for p in keys.iterdir()) == ["servekit.key"]


def test_demo_refuses_a_missing_parent_and_leaves_nothing(tmp_path: Path) -> None:
    result = servekit("demo", "--out", str(tmp_path / "absent" / "demo"))
    assert result.returncode == 2
    assert "does not exist" in result.stderr
    assert not (tmp_path / "absent").exists()
