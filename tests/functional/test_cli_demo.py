"""`make run`'s job: check, sign, build and verify every example, export the catalog."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

from servekit.receipts.keys import load_trust_store
from servekit.verify.kit import verify_kit
from tests.functional.helpers import ROOT, servekit


def _fresh_clone(where: Path) -> None:
    """What `make demo` needs of a fresh clone (no out/), with a stand-in for the venv
    that runs this checkout's servekit under this interpreter."""
    shutil.copy(ROOT / "Makefile", where / "Makefile")
    shutil.copy(ROOT / "pyproject.toml", where / "pyproject.toml")
    shutil.copytree(ROOT / "examples", where / "examples")
    bin_dir = where / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    script = bin_dir / "servekit"
    script.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m servekit.cli.main "$@"\n')
    script.chmod(0o755)
    (where / ".venv" / ".installed").touch()  # newer than pyproject.toml: no install


def test_make_demo_on_a_fresh_clone_builds_and_verifies_a_kit_per_example(tmp_path: Path) -> None:
    _fresh_clone(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("SERVEKIT_EXAMPLES_DIR", None)
    result = subprocess.run(
        ["make", "demo"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    tmp_path = tmp_path / "out" / "demo"
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
    # one example is enough here (the test above builds them all)
    examples = tmp_path / "examples"
    shutil.copytree(ROOT / "examples" / "packages" / "tiny-sim", examples / "tiny-sim")
    out = tmp_path / "out"
    keys = out / "keys"
    keys.mkdir(parents=True)
    (keys / "servekit.key").write_bytes(b"my real private key")
    demo = ("demo", "--examples", str(examples), "--out", str(out))
    refused = servekit(*demo)
    assert refused.returncode == 2, refused.stderr
    assert "--force" in refused.stderr
    assert not (out / "kits").exists()
    done = servekit(*demo, "--force")
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in (out / "kits").glob("*.tar.gz")) == ["tiny-sim-0.1.0.tar.gz"]
    assert (keys / "servekit.key").read_bytes() == b"my real private key"
    assert sorted(p.name for p in keys.iterdir()) == ["servekit.key"]


def test_demo_refuses_a_missing_parent_and_leaves_nothing(tmp_path: Path) -> None:
    result = servekit("demo", "--out", str(tmp_path / "absent" / "demo"))
    assert result.returncode == 2
    assert "does not exist" in result.stderr
    assert not (tmp_path / "absent").exists()
