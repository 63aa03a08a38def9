"""Nothing is lost: one overwrite rule (--force), no parent created unasked, no empty
directory left behind by a failed command."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.assets.make_kit_fixtures import private_key
from tests.cli.helpers import run_cli
from tests.functional.helpers import EXAMPLES

TINY = EXAMPLES / "tiny-sim"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_kit_build_asks_before_overwriting(tmp_path: Path) -> None:
    key = private_key("publisher", tmp_path)
    kit = tmp_path / "kit.tar.gz"
    kit.write_bytes(b"an earlier kit")
    code, _, err = run_cli(["kit", "build", str(TINY), "--key", str(key), "-o", str(kit)])
    assert code == 2 and "--force" in err
    assert kit.read_bytes() == b"an earlier kit"
    code, _, err = run_cli(
        ["kit", "build", str(TINY), "--key", str(key), "-o", str(kit), "--force"]
    )
    assert code == 0, err
    assert kit.read_bytes() != b"an earlier kit"


def test_model_digest_creates_no_parent(tmp_path: Path) -> None:
    target = tmp_path / "absent" / "pin.json"
    code, _, err = run_cli(["model", "digest", str(TINY / "licenses"), "-o", str(target)])
    assert code == 2 and "does not exist" in err
    assert not (tmp_path / "absent").exists()


def test_keys_generate_creates_no_parent(tmp_path: Path) -> None:
    code, _, err = run_cli(["keys", "generate", "--out", str(tmp_path / "a" / "keys")])
    assert code == 2 and "does not exist" in err
    assert not (tmp_path / "a").exists()


def test_a_failed_bench_run_leaves_no_empty_directory(tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = ["bench", "run", "--endpoint", f"http://127.0.0.1:{_closed_port()}", "--model", "m",
            "--input-tokens", "4:4", "--output-tokens", "1", "--requests", "1", "--out", str(out)]  # fmt: skip
    code, _, err = run_cli(argv)
    assert code == 7, err
    assert not out.exists()


def test_catalog_export_refuses_a_non_empty_directory(tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("keep me")
    code, _, err = run_cli(["catalog", "export", str(EXAMPLES), "--out", str(tmp_path)])
    assert code == 2 and "not empty" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mine.txt"]


def test_a_refused_kit_unpack_leaves_no_directory(tmp_path: Path) -> None:
    kit = EXAMPLES.parent.parent / "tests" / "assets" / "kit_untrusted_key.tar.gz"
    trust = EXAMPLES.parent.parent / "tests" / "assets" / "keys" / "publisher.pub"
    target = tmp_path / "unpacked"
    code, _, err = run_cli(["kit", "unpack", str(kit), str(target), "--trust", str(trust)])
    assert code == 13, err
    assert not target.exists()
    code, _, err = run_cli(["kit", "unpack", str(kit), str(tmp_path / "a" / "b"), "--trust",
                            str(trust)])  # fmt: skip
    assert code == 2 and not (tmp_path / "a").exists()
