"""The canonical tar rendering is what Python's tarfile writes, and what GNU tar reads."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

import pytest

from servekit.receipts.archive import KitFile, kit_file, render_tar, tar_length

FILES = [
    kit_file("MANIFEST", b"m" * 700),
    kit_file("deploy/launch.sh", b"#!/bin/sh\n"),
    kit_file("evidence/empty.jsonl", b""),
    kit_file("a" * 100, b"exactly one block".ljust(512, b".")),
]


def _tarfile(files: list[KitFile], mtime: int) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for f in sorted(files, key=lambda f: f.path):
            info = tarfile.TarInfo(f.path)
            info.size, info.mtime, info.mode = len(f.data), mtime, 0o755 if f.executable else 0o644
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(f.data))
    return buffer.getvalue()


@pytest.mark.parametrize("mtime", [0, 1764460800])
def test_render_tar_is_byte_for_byte_what_tarfile_writes(mtime: int) -> None:
    assert render_tar(FILES, mtime) == _tarfile(FILES, mtime)
    assert render_tar([], mtime) == _tarfile([], mtime)


def test_gnu_tar_lists_the_rendering_with_its_modes(tmp_path: Path) -> None:
    (tmp_path / "k.tar").write_bytes(render_tar(FILES, 1764460800))
    listing = subprocess.run(
        ["tar", "-tvf", str(tmp_path / "k.tar"), "--numeric-owner"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert [line.split()[-1] for line in listing] == sorted(f.path for f in FILES)
    modes = {line.split()[-1]: line.split()[0] for line in listing}
    assert modes["deploy/launch.sh"] == "-rwxr-xr-x" and modes["MANIFEST"] == "-rw-r--r--"


def test_a_path_longer_than_a_ustar_name_is_refused() -> None:
    with pytest.raises(ValueError, match="longer than 100 bytes"):
        render_tar([kit_file("a" * 101, b"")], 0)


@pytest.mark.parametrize(
    "sizes", [[], [0], [1], [511, 512, 513], [10240 - 2048], [10240 - 2047], [5000] * 7]
)
def test_tar_length_is_the_length_of_the_rendering(sizes: list[int]) -> None:
    files = [kit_file(f"f{i}", b"x" * size) for i, size in enumerate(sizes)]
    assert tar_length(sizes) == len(render_tar(files, 0))
