"""The acceptance of issue 4, through the CLI: digest, pin, --fetch, verify, bad input."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from servekit.weights.hashing import MAP_MIN_BYTES, READ_BUFFER
from tests.functional.helpers import ROOT
from tests.functional.helpers import servekit as run_servekit
from tests.hubserver import GRANTED_TOKEN, FakeRepo, HubServer, hub_server, model_files

__all__ = ["hub_server"]

K3 = ROOT / "examples" / "packages" / "kimi-k3-8xb300"
BIG = "model-00001-of-00002.safetensors"
CONFIG = b'{"layers": 2}'


def servekit(
    *args: str, env: dict[str, str] | None = None, cwd: Path = ROOT
) -> subprocess.CompletedProcess[str]:
    result = run_servekit(*args, env=env, cwd=cwd)
    assert "Traceback" not in result.stderr, result.stderr
    return result


def _tree(root: Path, order: list[str] | None = None) -> Path:
    contents = {
        "config.json": CONFIG,
        "tokenizer/tokenizer.json": b'{"vocab": []}',
        BIG: bytes(range(256)) * ((READ_BUFFER * 2) // 256 + 3),
        "model-00002-of-00002.safetensors": b"w" * 4096,
    }
    for name in order or list(contents):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(contents[name])
    return root


@pytest.fixture(scope="module")
def tree_pin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pin of :func:`_tree`'s files, made once by `servekit model digest` (a pin records
    paths relative to the tree, so it is the pin of every tree of the same files)."""
    root = tmp_path_factory.mktemp("pin")
    tree = _tree(root / "tree")
    result = servekit("model", "digest", str(tree), "-o", str(root / "PIN.json"))
    assert result.returncode == 0, result.stderr
    return root / "PIN.json"


@pytest.fixture
def pinned(tmp_path: Path, tree_pin: Path) -> tuple[Path, Path]:
    """A tree of its own for the test to damage, and a copy of its pin."""
    tree = _tree(tmp_path / "tree")
    shutil.copyfile(tree_pin, tmp_path / "PIN.json")
    return tree, tmp_path / "PIN.json"


def _verify(tree: Path, pin: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return servekit("verify", "weights", str(tree), "--pin", str(pin), *extra)


def test_digest_then_verify_exits_0(pinned: tuple[Path, Path]) -> None:
    tree, pin = pinned
    result = _verify(tree, pin)
    assert result.returncode == 0, result.stderr
    assert (
        "4 files" in result.stdout and json.loads(pin.read_text())["tree_digest"] in result.stdout
    )


def test_flipping_a_middle_byte_of_a_large_file_exits_10_naming_it(
    pinned: tuple[Path, Path],
) -> None:
    tree, pin = pinned
    _flip_middle_byte(tree / BIG)
    result = _verify(tree, pin)
    assert result.returncode == 10
    assert f"digest: {BIG}: expected sha256 " in result.stderr


def _flip_middle_byte(path: Path) -> None:
    with path.open("r+b") as f:
        size = f.seek(0, os.SEEK_END)
        f.seek(size // 2)
        byte = f.read(1)
        f.seek(size // 2)
        f.write(bytes([byte[0] ^ 0xFF]))


def test_a_tree_large_enough_to_be_mapped_catches_a_flipped_byte(tmp_path: Path) -> None:
    tree = _tree(tmp_path / "tree")
    (tree / BIG).write_bytes(bytes(range(256)) * (MAP_MIN_BYTES // 256))  # the mmap workers
    assert servekit("model", "digest", str(tree), "-o", str(tmp_path / "PIN.json")).returncode == 0
    assert _verify(tree, tmp_path / "PIN.json").returncode == 0
    _flip_middle_byte(tree / BIG)
    result = _verify(tree, tmp_path / "PIN.json")
    assert result.returncode == 10 and f"digest: {BIG}" in result.stderr


def test_truncating_a_file_exits_10_naming_it(pinned: tuple[Path, Path]) -> None:
    tree, pin = pinned
    with (tree / BIG).open("r+b") as f:
        f.truncate(100)
    result = _verify(tree, pin)
    assert result.returncode == 10
    assert f"size: {BIG}: expected" in result.stderr and "actual 100 bytes" in result.stderr


def test_removing_a_file_exits_11_naming_it(pinned: tuple[Path, Path]) -> None:
    tree, pin = pinned
    (tree / "config.json").unlink()
    result = _verify(tree, pin)
    assert result.returncode == 11 and "missing: config.json" in result.stderr


def test_adding_a_file_exits_12_naming_it(pinned: tuple[Path, Path]) -> None:
    tree, pin = pinned
    (tree / "tokenizer" / "added.txt").write_text("x")
    result = _verify(tree, pin)
    assert result.returncode == 12 and "extra: tokenizer/added.txt" in result.stderr


def test_renaming_a_file_exits_non_zero_naming_both(pinned: tuple[Path, Path]) -> None:
    tree, pin = pinned
    (tree / BIG).rename(tree / "renamed.safetensors")
    result = _verify(tree, pin)
    assert result.returncode == 11
    assert f"missing: {BIG}" in result.stderr and "extra: renamed.safetensors" in result.stderr


def test_the_json_report_lists_each_problem(pinned: tuple[Path, Path]) -> None:
    tree, pin = pinned
    (tree / "config.json").unlink()
    result = _verify(tree, pin, "--json")
    assert result.returncode == 11
    report = json.loads(result.stdout)
    assert report["ok"] is False and report["stage"] == "listing"
    assert report["problems"] == [
        {
            "kind": "missing",
            "path": "config.json",
            "expected": f"13 bytes, sha256 {hashlib.sha256(CONFIG).hexdigest()}",
            "actual": "absent",
        }
    ]


def test_the_same_tree_gives_the_same_digest_in_any_order(tmp_path: Path) -> None:
    names = ["config.json", "tokenizer/tokenizer.json", BIG, "model-00002-of-00002.safetensors"]
    first = _tree(tmp_path / "a", names)
    second = _tree(tmp_path / "b", list(reversed(names)))
    digests = []
    for tree in (first, second):
        result = servekit("model", "digest", str(tree), "--json", "--workers", "1")
        assert result.returncode == 0, result.stderr
        digests.append(json.loads(result.stdout)["tree_digest"])
    assert digests[0] == digests[1]


def test_a_symlink_loop_and_a_fifo_exit_16(pinned: tuple[Path, Path]) -> None:
    tree, pin = pinned
    (tree / "loop").symlink_to("loop")
    os.mkfifo(tree / "fifo")  # still unreadable as root, unlike a chmod 000 file
    result = _verify(tree, pin)
    assert result.returncode == 16
    assert "unsafe: loop" in result.stderr and "unreadable: fifo" in result.stderr
    result = servekit("model", "digest", str(tree))
    assert result.returncode == 16 and "a symlink loop" in result.stderr


def test_a_directory_where_a_file_is_pinned_is_named(pinned: tuple[Path, Path]) -> None:
    tree, pin = pinned
    (tree / "config.json").unlink()
    (tree / "config.json").mkdir()
    result = _verify(tree, pin)
    assert result.returncode == 11 and "missing: config.json" in result.stderr


def test_bad_options_are_usage_errors(pinned: tuple[Path, Path], tmp_path: Path) -> None:
    tree, pin = pinned
    assert servekit("verify", "weights", str(tree)).returncode == 2
    both = servekit("verify", "weights", str(tree), "--pin", str(pin), "--package", str(K3))
    assert both.returncode == 2 and "exactly one" in both.stderr
    local = servekit("verify", "weights", "--fetch", "--pin", str(pin))
    assert local.returncode == 2 and "nothing to fetch" in local.stderr
    (tmp_path / "bad.json").write_text("{}")
    assert _verify(tree, tmp_path / "bad.json").returncode == 2
    assert (
        servekit("verify", "weights", str(tmp_path / "absent"), "--pin", str(pin)).returncode == 2
    )


# --- against the local Hub ----------------------------------------------------------------


def _hub_repo(server: HubServer, name: str, **kwargs: bool) -> tuple[FakeRepo, str]:
    repo = server.add_repo(FakeRepo(name, **kwargs))
    return repo, repo.commit(model_files(40))


def test_pin_then_fetch_then_verify_through_the_hub(hub_server: HubServer, tmp_path: Path) -> None:
    repo, commit = _hub_repo(hub_server, "org/cli-model")
    env = hub_server.env(tmp_path)
    result = servekit("model", "pin", repo.repo_id, "--revision", "main", env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    pin = json.loads((tmp_path / "PIN.json").read_text())
    assert pin["commit"] == commit and pin["file_count"] == 7
    result = servekit(
        "verify", "weights", "--fetch", "--pin", "PIN.json", "--json", env=env, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] and report["actual_tree_digest"] == pin["tree_digest"]
    snapshot = Path(report["directory"])
    assert snapshot == tmp_path / "hf-cache" / "models--org--cli-model" / "snapshots" / commit
    shard = next(snapshot.glob("*.safetensors")).resolve()
    shard.chmod(0o644)
    with shard.open("r+b") as f:  # corrupt the cached blob: the next check must fail
        f.seek(1000)
        f.write(b"\0corrupt")
    result = servekit(
        "verify", "weights", str(snapshot), "--pin", "PIN.json", env=env, cwd=tmp_path
    )
    assert result.returncode == 10 and "digest: model-0000" in result.stderr


def test_pin_into_a_package_then_verify_with_package(hub_server: HubServer, tmp_path: Path) -> None:
    _hub_repo(hub_server, "moonshotai/Kimi-K3")
    package = Path(shutil.copytree(K3, tmp_path / "k3"))
    env = hub_server.env(tmp_path)
    args = ("model", "pin", "moonshotai/Kimi-K3", "--revision", "main", "--package", str(package))
    result = servekit(*args, env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (package / "model" / "pin.json").is_file() and not (tmp_path / "PIN.json").exists()
    assert servekit("package", "check", str(package), env=env).returncode == 0
    result = servekit(
        "verify", "weights", "--fetch", "--package", str(package), env=env, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr


def test_a_gated_repo_without_a_token_exits_6_with_a_hint(
    hub_server: HubServer, tmp_path: Path
) -> None:
    repo, _ = _hub_repo(hub_server, "org/cli-gated", gated=True)
    env = hub_server.env(tmp_path)
    result = servekit("model", "pin", repo.repo_id, "--revision", "main", env=env, cwd=tmp_path)
    assert result.returncode == 6
    assert "is gated" in result.stderr and "HF_TOKEN" in result.stderr
    env["HF_TOKEN"] = GRANTED_TOKEN
    result = servekit("model", "pin", repo.repo_id, "--revision", "main", env=env, cwd=tmp_path)
    assert result.returncode == 0, result.stderr


def test_an_unknown_revision_exits_6(hub_server: HubServer, tmp_path: Path) -> None:
    repo, _ = _hub_repo(hub_server, "org/cli-revision")
    env = hub_server.env(tmp_path)
    result = servekit("model", "pin", repo.repo_id, "--revision", "v9", env=env, cwd=tmp_path)
    assert result.returncode == 6 and "revision 'v9' does not exist" in result.stderr


def test_a_built_kit_carries_the_pin_to_verify_weights(
    hub_server: HubServer, tmp_path: Path
) -> None:
    _, commit = _hub_repo(hub_server, "moonshotai/Kimi-K3")
    package = Path(shutil.copytree(K3, tmp_path / "k3"))
    env = hub_server.env(tmp_path)
    steps = [
        ("model", "pin", "moonshotai/Kimi-K3", "--revision", "main", "--package", str(package)),
        ("keys", "generate", "--out", str(tmp_path / "keys")),
        (
            "kit",
            "build",
            str(package),
            "--key",
            str(tmp_path / "keys" / "servekit.key"),
            "-o",
            "kit.tar.gz",
        ),
    ]
    for args in steps:
        result = servekit(*args, env=env, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
    result = servekit("verify", "weights", "--fetch", "--kit", "kit.tar.gz", env=env, cwd=tmp_path)
    assert result.returncode == 2 and "--kit needs --trust" in result.stderr
    trust = ("--trust", str(tmp_path / "keys" / "servekit.pub"))
    result = servekit(
        "verify", "weights", "--fetch", "--kit", "kit.tar.gz", *trust, env=env, cwd=tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("This kit is kimi-k3-8xb300 version 1.0.0")
    snapshot = tmp_path / "hf-cache" / "models--moonshotai--Kimi-K3" / "snapshots" / commit
    (snapshot / "config.json").unlink()
    result = servekit(
        "verify", "weights", str(snapshot), "--kit", "kit.tar.gz", *trust, env=env, cwd=tmp_path
    )
    assert result.returncode == 11 and "missing: config.json" in result.stderr
