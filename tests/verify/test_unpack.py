"""``kit unpack`` writes only verified bytes, only inside its directory, with exact modes.

The attacker here owns part of the buyer's disk: a link where the kit is to go, or a
link planted inside the target while the kit is written.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from servekit.errors import UsageError
from servekit.receipts.keys import load_trust_store
from servekit.verify.kit import unpack_kit, verify_kit
from servekit.verify.unpack import write_tree
from tests.functional.helpers import SERVEKIT
from tests.kit.helpers import ASSETS, KEYS

TRUST = load_trust_store(KEYS / "trust.toml")
KIT = ASSETS / "kit_valid.tar.gz"
FILES = {"README.md": b"read me\n", "deploy/launch.sh": b"#!/bin/sh\n", "deploy/k8s/a.yaml": b""}


def _entries(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def test_a_target_that_is_a_link_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o755)
    (tmp_path / "kit").symlink_to(elsewhere)
    with pytest.raises(UsageError, match="symbolic link"):
        unpack_kit(KIT, TRUST, tmp_path / "kit")
    assert _entries(elsewhere) == []


def test_a_dangling_link_is_refused_and_nothing_is_created(tmp_path: Path) -> None:
    (tmp_path / "kit").symlink_to(tmp_path / "created-by-the-link")
    with pytest.raises(UsageError, match="symbolic link"):
        unpack_kit(KIT, TRUST, tmp_path / "kit")
    assert not (tmp_path / "created-by-the-link").exists()


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o1777])
def test_a_target_others_can_write_is_refused(tmp_path: Path, mode: int) -> None:
    target = tmp_path / "kit"
    target.mkdir()
    target.chmod(mode)
    with pytest.raises(UsageError, match="group or others"):
        unpack_kit(KIT, TRUST, target)
    assert _entries(target) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a directory away")
def test_a_target_another_user_owns_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "kit"
    target.mkdir(mode=0o755)
    os.chown(target, 12345, 12345)  # an attacker's empty directory, waiting in /tmp
    with pytest.raises(UsageError, match="belongs to another user"):
        unpack_kit(KIT, TRUST, target)
    assert _entries(target) == []


def test_a_target_that_is_a_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "kit").write_text("x")
    with pytest.raises(UsageError, match="cannot use"):
        unpack_kit(KIT, TRUST, tmp_path / "kit")


@pytest.fixture
def root(tmp_path: Path) -> Iterator[int]:
    """An open handle on an empty target, as ``write_files`` holds it while writing."""
    target = tmp_path / "kit"
    target.mkdir(mode=0o755)
    fd = os.open(target, os.O_RDONLY | os.O_DIRECTORY)
    yield fd
    os.close(fd)


def test_a_directory_link_planted_while_writing_is_not_followed(tmp_path: Path, root: int) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (tmp_path / "kit" / "deploy").symlink_to(outside)
    with pytest.raises(FileExistsError):
        write_tree(root, FILES)
    assert _entries(outside) == []


def test_a_file_link_planted_while_writing_is_not_followed(tmp_path: Path, root: int) -> None:
    (tmp_path / "kit" / "README.md").symlink_to(tmp_path / "pwned")
    with pytest.raises(FileExistsError):
        write_tree(root, FILES)
    assert not (tmp_path / "pwned").exists()


def test_a_directory_planted_while_writing_is_not_reused(tmp_path: Path, root: int) -> None:
    (tmp_path / "kit" / "deploy").mkdir()
    with pytest.raises(FileExistsError):
        write_tree(root, FILES)
    assert _entries(tmp_path / "kit") == ["README.md", "deploy"]


def test_modes_are_exact_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        unpack_kit(KIT, TRUST, tmp_path / "kit")
    finally:
        os.umask(old)
    modes = {
        p.relative_to(tmp_path).as_posix(): stat.S_IMODE(p.stat().st_mode)
        for p in [tmp_path / "kit", *(tmp_path / "kit").rglob("*")]
    }
    directories = {p for p in modes if (tmp_path / p).is_dir()}
    assert {modes[p] for p in directories} == {0o755}
    assert modes.pop("kit/deploy/launch.sh") == 0o755
    assert {m for p, m in modes.items() if p not in directories} == {0o644}
    assert verify_kit(tmp_path / "kit", TRUST).files == 15


@pytest.mark.parametrize("umask", ["002", "000", "077"])
def test_the_cli_unpacks_under_any_umask(tmp_path: Path, umask: str) -> None:
    """Under umask 002 the CLI made DIR group-writable itself, then refused it."""
    target = tmp_path / "kit"
    done = subprocess.run(
        ["sh", "-c", f'umask {umask} && exec "$@"', "sh", *SERVEKIT, "kit", "unpack",
         str(KIT), str(target), "--trust", str(KEYS / "trust.toml")],
        capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(target.stat().st_mode) & 0o022 == 0
    assert verify_kit(target, TRUST).files > 0
