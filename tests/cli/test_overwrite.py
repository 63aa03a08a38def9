"""Nothing is lost: one overwrite rule (--force), no parent created unasked, no empty
directory left behind by a failed command."""

from __future__ import annotations

import json
import socket
from pathlib import Path

from tests.assets.make_kit_fixtures import private_key
from tests.cli.helpers import run_cli
from tests.functional.helpers import EXAMPLES
from tests.functional.test_cli_bench import VLLM_RESULT
from tests.replay.fixtures import Keys

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
    assert code == 2 and "does not exist" in " ".join(err.split())  # wrapped at 80 columns
    assert not (tmp_path / "absent").exists()


def test_keys_generate_creates_no_parent(tmp_path: Path) -> None:
    code, _, err = run_cli(["keys", "generate", "--out", str(tmp_path / "a" / "keys")])
    assert code == 2 and "does not exist" in " ".join(err.split())  # wrapped at 80 columns
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


def test_bench_compare_sign_asks_before_overwriting(
    replay_copy: Path, kit: Path, keys: Keys
) -> None:
    signed = replay_copy / "reproduction.dsse.json"
    signed.write_text("an earlier reproduction")
    argv = ["bench", "compare", str(kit), str(replay_copy), "--tolerance", "50",
            "--sign", str(keys.buyer)]  # fmt: skip
    code, _, err = run_cli(argv)
    assert code == 2 and "--force" in err
    assert signed.read_text() == "an earlier reproduction"
    code, _, err = run_cli([*argv, "--force"])
    assert code == 0, err
    assert signed.read_text() != "an earlier reproduction"


def test_bench_compare_sign_creates_no_parent(replay_copy: Path, kit: Path, keys: Keys) -> None:
    target = replay_copy / "absent" / "r.dsse.json"
    code, _, err = run_cli(["bench", "compare", str(kit), str(replay_copy), "--tolerance", "50",
                            "--sign", str(keys.buyer), "--reproduction-out", str(target)])  # fmt: skip
    assert code == 2 and "does not exist" in " ".join(err.split())  # wrapped at 80 columns
    assert not target.parent.exists()


def test_feed_sign_creates_no_parent(tmp_path: Path) -> None:
    source = tmp_path / "feed.yaml"
    source.write_text("publisher: servekit tests\n")
    key = private_key("publisher", tmp_path)
    out = tmp_path / "absent" / "feed.json"
    code, _, err = run_cli(["feed", "sign", str(source), "--key", str(key), "-o", str(out),
                            "--state", str(tmp_path / "state.json")])  # fmt: skip
    assert code == 2 and "does not exist" in " ".join(err.split())  # wrapped at 80 columns
    assert not out.parent.exists() and not (tmp_path / "state.json").exists()


def test_store_download_asks_before_overwriting(tmp_path: Path) -> None:
    kit = tmp_path / "kit.tar.gz"
    kit.write_bytes(b"a kit I already have")
    argv = ["store", "download", "tiny-sim", "--url", f"http://127.0.0.1:{_closed_port()}",
            "--token", "sk-x", "-o"]  # fmt: skip
    code, _, err = run_cli([*argv, str(kit)])
    assert code == 2 and "--force" in err
    assert kit.read_bytes() == b"a kit I already have"
    code, _, err = run_cli([*argv, str(tmp_path / "absent" / "kit.tar.gz")])
    assert code == 2 and not (tmp_path / "absent").exists()


def test_bench_import_asks_before_overwriting(tmp_path: Path) -> None:
    result = tmp_path / "vllm.json"
    result.write_text(json.dumps(VLLM_RESULT))
    out = tmp_path / "v.jsonl"
    out.write_text("earlier evidence")
    code, _, err = run_cli(["bench", "import", "vllm", str(result), "-o", str(out)])
    assert code == 2 and "--force" in err
    assert out.read_text() == "earlier evidence"


def test_keys_generate_never_replaces_a_key(tmp_path: Path) -> None:
    assert run_cli(["keys", "generate", "--out", str(tmp_path)])[0] == 0
    before = (tmp_path / "servekit.key").read_bytes()
    code, _, err = run_cli(["keys", "generate", "--out", str(tmp_path)])
    assert code == 5, err
    assert (tmp_path / "servekit.key").read_bytes() == before
