"""The safe kit reader: what it refuses, before reading a byte of the member."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from servekit.errors import ReadError, UnsafeArchiveError
from servekit.verify.archive import Limits, kit_member_name, read_kit


def _tar(tmp_path: Path, *members: tuple[tarfile.TarInfo, bytes | None]) -> Path:
    path = tmp_path / "kit.tar.gz"
    with tarfile.open(path, "w:gz", format=tarfile.PAX_FORMAT) as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _file(name: str, data: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), data


def _special(name: str, kind: bytes, linkname: str = "") -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, linkname
    return info, None


def test_reads_files_and_skips_directories(tmp_path: Path) -> None:
    directory = _special("./deploy/", tarfile.DIRTYPE)
    kit = read_kit(
        _tar(tmp_path, directory, _file("./deploy/a.yaml", b"a"), _file("MANIFEST", b"m"))
    )
    assert dict(kit.files) == {"deploy/a.yaml": b"a", "MANIFEST": b"m"}


@pytest.mark.parametrize(
    ("member", "message"),
    [
        (_file("../x"), "leaves the kit"),
        (_file("deploy/../../x"), "leaves the kit"),
        (_file("/etc/passwd"), "absolute path"),
        (_file("a b"), "not a plain kit path"),
        (_file("a\\..\\b"), "not a plain kit path"),
        (_special("link", tarfile.SYMTYPE, "/etc/passwd"), "a link to '/etc/passwd'"),
        (_special("hard", tarfile.LNKTYPE, "MANIFEST"), "a link to 'MANIFEST'"),
        (_special("dev", tarfile.CHRTYPE), "a device"),
        (_special("blk", tarfile.BLKTYPE), "a device"),
        (_special("fifo", tarfile.FIFOTYPE), "a FIFO"),
    ],
)
def test_unsafe_members_are_refused(
    tmp_path: Path, member: tuple[tarfile.TarInfo, bytes | None], message: str
) -> None:
    with pytest.raises(UnsafeArchiveError) as info:
        read_kit(_tar(tmp_path, _file("MANIFEST"), member))
    assert message in str(info.value)
    assert info.value.file == member[0].name


def test_duplicate_names_are_refused(tmp_path: Path) -> None:
    with pytest.raises(UnsafeArchiveError, match="same name twice"):
        read_kit(_tar(tmp_path, _file("a", b"1"), _file("./a", b"2")))


def test_limits(tmp_path: Path) -> None:
    kit = _tar(tmp_path, _file("a", b"12345"), _file("b", b"12345"), _file("c", b"1"))
    with pytest.raises(UnsafeArchiveError, match="too large") as info:
        read_kit(kit, Limits(max_member_bytes=4))
    assert (info.value.file, info.value.actual) == ("a", "5 bytes")
    with pytest.raises(UnsafeArchiveError, match="too large in total") as info:
        read_kit(kit, Limits(max_total_bytes=9))
    assert info.value.file == "b"
    with pytest.raises(UnsafeArchiveError, match="too many members"):
        read_kit(kit, Limits(max_members=2))
    assert (
        len(read_kit(kit, Limits(max_member_bytes=5, max_total_bytes=11, max_members=3)).files) == 3
    )


def test_oversized_member_is_refused_before_it_is_read(tmp_path: Path) -> None:
    """A header may claim any size; the limit applies to the claim, not to what follows."""
    big = tarfile.TarInfo("big")
    big.size = 10**12
    path = tmp_path / "kit.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        tar.fileobj.write(big.tobuf())  # type: ignore[union-attr]
    with pytest.raises(UnsafeArchiveError, match="too large"):
        read_kit(path)


@pytest.mark.parametrize(
    "data", [b"not gzip at all", b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff garbage"]
)
def test_a_damaged_archive_is_refused(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "kit.tar.gz"
    path.write_bytes(data)
    with pytest.raises(UnsafeArchiveError, match=r"not a readable \.tar\.gz"):
        read_kit(path)


def test_a_truncated_archive_is_refused(tmp_path: Path) -> None:
    path = _tar(tmp_path, _file("a", os.urandom(50_000)))
    path.write_bytes(path.read_bytes()[:-2000])
    with pytest.raises(UnsafeArchiveError):
        read_kit(path)


def test_a_missing_kit_is_a_read_error(tmp_path: Path) -> None:
    with pytest.raises(ReadError, match="does not exist"):
        read_kit(tmp_path / "nope.tar.gz")


def test_directory_kits_refuse_fifos_and_unreadable_files(tmp_path: Path) -> None:
    (tmp_path / "kit").mkdir()
    os.mkfifo(tmp_path / "kit" / "pipe")
    with pytest.raises(UnsafeArchiveError, match="not a regular file"):
        read_kit(tmp_path / "kit")
    (tmp_path / "kit" / "pipe").unlink()
    (tmp_path / "kit" / "secret").write_text("x")
    (tmp_path / "kit" / "secret").chmod(0)
    if os.geteuid() == 0:
        pytest.skip("root reads any file")
    with pytest.raises(ReadError):
        read_kit(tmp_path / "kit")


def test_member_names() -> None:
    assert kit_member_name("./a/b") == "a/b"
    assert kit_member_name("a/") == "a"
    assert kit_member_name("./") == ""
