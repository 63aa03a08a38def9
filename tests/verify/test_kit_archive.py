"""The strict kit reader: each way an archive could be read two ways is refused first."""

from __future__ import annotations

import contextlib
import gzip
import io
import os
import tarfile
import threading
from pathlib import Path

import pytest

from servekit.errors import (
    ArchiveLimitError,
    ExtraFileError,
    FileChangedError,
    GzipStreamError,
    MemberMetadataError,
    MemberOrderError,
    NonCanonicalArchiveError,
    ReadError,
    ReceiptLimitError,
    TarHeaderError,
    UnsafeArchiveError,
)
from servekit.receipts.archive import kit_file, render_tar
from servekit.receipts.manifest import manifest_entries, render_manifest
from servekit.verify.archive import Limits, _Budget, _read_regular, kit_member_name, read_kit
from servekit.verify.tarstream import Gunzip, StreamLimits, _first_difference
from tests.assets.make_kit_fixtures import _end, _gzip, _info, _member, _members
from tests.functional.helpers import ROOT, servekit

FILES = {"README.md": b"hello\n", "deploy/launch.sh": b"#!/bin/sh\n", "evidence/a.jsonl": b"{}\n"}


def _files(**extra: bytes) -> dict[str, bytes]:
    files = {**FILES, **{k.replace("__", "/"): v for k, v in extra.items()}}
    return {"MANIFEST": render_manifest(manifest_entries(files)), **files}


def _write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "kit.tar.gz"
    path.write_bytes(data)
    return path


def _kit(tmp_path: Path, files: dict[str, bytes] | None = None, tail: bytes = b"") -> Path:
    return _write(tmp_path, _gzip(_end(_members(files or _files()) + tail)))


def test_a_canonical_archive_is_read_with_its_mtime(tmp_path: Path) -> None:
    files = _files()
    path = _write(tmp_path, _gzip(render_tar([kit_file(p, d) for p, d in files.items()], 7)))
    kit = read_kit(path)
    assert dict(kit.files) == files and kit.mtime == 7


@pytest.mark.parametrize(
    ("kind", "linkname", "message"),
    [
        (tarfile.SYMTYPE, "/etc/passwd", "a symlink to '/etc/passwd'"),
        (tarfile.LNKTYPE, "MANIFEST", "a hard link to 'MANIFEST'"),
        (tarfile.CHRTYPE, "", "a character device"),
        (tarfile.BLKTYPE, "", "a block device"),
        (tarfile.FIFOTYPE, "", "a FIFO"),
    ],
)
def test_links_and_devices_are_refused(
    tmp_path: Path, kind: bytes, linkname: str, message: str
) -> None:
    info = _info("zz", 0, type=kind, linkname=linkname)
    with pytest.raises(UnsafeArchiveError) as exc:
        read_kit(_kit(tmp_path, tail=info.tobuf(tarfile.PAX_FORMAT)))
    assert type(exc.value) is UnsafeArchiveError
    assert (exc.value.file, exc.value.actual) == ("zz", message)


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("../x", "leaves the kit"),
        ("deploy/../../x", "leaves the kit"),
        ("/etc/passwd", "absolute path"),
        ("./zz", "not a plain kit path"),
        ("zz/", "not a plain kit path"),
        ("a b", "not a plain kit path"),
        ("a\\..\\b", "not a plain kit path"),
        ("zz\x1b[2J", "not a plain kit path"),
    ],
)
def test_unsafe_names_are_refused(tmp_path: Path, name: str, message: str) -> None:
    with pytest.raises(UnsafeArchiveError, match=message) as exc:
        read_kit(_kit(tmp_path, tail=_member(name, b"x")))
    assert exc.value.file == name


def test_directories_and_other_types_are_refused(tmp_path: Path) -> None:
    directory = _info("zz", 0, type=tarfile.DIRTYPE, mode=0o644).tobuf(tarfile.PAX_FORMAT)
    with pytest.raises(TarHeaderError, match="servekit never writes") as exc:
        read_kit(_kit(tmp_path, tail=directory))
    assert exc.value.actual == "type b'5'"


def test_a_header_with_a_bad_checksum_is_refused(tmp_path: Path) -> None:
    block = bytearray(_member("zz", b"x"))
    block[0:2] = b"zy"  # the name changes, the stored checksum does not
    with pytest.raises(TarHeaderError, match="malformed"):
        read_kit(_kit(tmp_path, tail=bytes(block)))


def _patched(block: bytes, offset: int, raw: bytes) -> bytes:
    """``block`` with ``raw`` written at ``offset`` and its checksum made right again."""
    data = bytearray(block)
    data[offset : offset + len(raw)] = raw
    data[148:156] = b" " * 8
    data[148:156] = b"%06o\0 " % sum(data[:512])
    return bytes(data)


@pytest.mark.parametrize(
    ("offset", "raw", "expected"),
    [
        (257, b"ustar  \0", "ustar magic"),  # old GNU magic
        (345, b"deploy", "empty ustar prefix"),  # GNU tar and tarfile join prefix/name
        (100, b"000644 \0", "mode: 7 octal digits"),  # GNU tar's spelling, not tarfile's
        (124, b"\x80" + b"\0" * 10 + b"\x01", "size: 11 octal digits"),  # base-256
    ],
)
def test_headers_spelled_another_way_are_refused(
    tmp_path: Path, offset: int, raw: bytes, expected: str
) -> None:
    with pytest.raises(TarHeaderError) as info:
        read_kit(_kit(tmp_path, tail=_patched(_member("zz", b"x"), offset, raw)))
    assert expected in str(info.value.expected)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"uid": 1000}, "owner"),
        ({"gid": 5}, "owner"),
        ({"uname": "root"}, "user or group name"),
        ({"mode": 0o666}, "mode"),
        ({"mode": 0o4644}, "mode"),
        ({"mtime": 1}, "mtime"),
    ],
)
def test_non_canonical_metadata_is_refused(
    tmp_path: Path, fields: dict[str, object], message: str
) -> None:
    files = _files(zz=b"x")
    tar = b"".join(_member(p, d, **(fields if p == "zz" else {})) for p, d in sorted(files.items()))
    with pytest.raises(MemberMetadataError, match=message) as exc:
        read_kit(_write(tmp_path, _gzip(_end(tar))))
    assert exc.value.file == "zz"


def test_launch_sh_must_be_executable_and_nothing_else(tmp_path: Path) -> None:
    files = _files()
    tar = b"".join(_member(p, d, mode=0o644) for p, d in sorted(files.items()))
    with pytest.raises(MemberMetadataError) as exc:
        read_kit(_write(tmp_path, _gzip(_end(tar))))
    assert (exc.value.file, exc.value.expected, exc.value.actual) == (
        "deploy/launch.sh",
        "0755",
        "0644",
    )


def test_order_duplicates_and_manifest_first(tmp_path: Path) -> None:
    files = _files()
    with pytest.raises(UnsafeArchiveError, match="same name twice"):
        read_kit(_kit(tmp_path, files, _member("evidence/a.jsonl", b"{}\n")))
    with pytest.raises(MemberOrderError, match="path order"):
        read_kit(_kit(tmp_path, files, _member("deploy/zz", b"")))
    no_manifest = {p: d for p, d in files.items() if p != "MANIFEST"}
    with pytest.raises(MemberOrderError, match="must be MANIFEST"):
        read_kit(_kit(tmp_path, no_manifest))


@pytest.mark.parametrize(
    "extra",
    [
        {"readme.md": b"x"},  # README.md on a case-insensitive disk
        {"evidence": b"x"},  # a file where evidence/ is a directory
        {"README.md/x": b"x"},  # a directory where README.md is a file
        {"eVidence": b"x", "evidence/b.jsonl": b"x"},  # the same, in another case
    ],
    ids=["case-twin", "file-over-directory", "directory-under-file", "case-file-directory"],
)
def test_names_no_disk_can_hold_side_by_side_are_refused(
    tmp_path: Path, extra: dict[str, bytes]
) -> None:
    files = _files(**{k.replace("/", "__"): v for k, v in extra.items()})
    with pytest.raises(UnsafeArchiveError, match=r"differ only in case|also the directory"):
        read_kit(_kit(tmp_path, files))


def test_directories_that_differ_only_in_case_may_hold_different_files(tmp_path: Path) -> None:
    files = _files(eVIDENCE__b_jsonl=b"x")  # merges with evidence/ there; nothing is lost
    assert read_kit(_kit(tmp_path, files)).files["eVIDENCE/b_jsonl"] == b"x"


def test_members_are_admitted_against_manifest_before_their_data(tmp_path: Path) -> None:
    files = _files()
    with pytest.raises(ExtraFileError) as extra:
        read_kit(_kit(tmp_path, files, _member("zz", b"x")))
    assert extra.value.file == "zz"
    header_only = _info("evidence/a.jsonl", 10**6).tobuf(tarfile.PAX_FORMAT)
    tar = _member("MANIFEST", files["MANIFEST"]) + _member("README.md", files["README.md"])
    tar += _member("deploy/launch.sh", files["deploy/launch.sh"], mode=0o755) + header_only
    with pytest.raises(FileChangedError, match="size differs") as changed:
        read_kit(_write(tmp_path, _gzip(tar)))  # refused before reading: no data follows
    assert (changed.value.expected, changed.value.actual) == ("3 bytes", "1000000 bytes")


def test_limits(tmp_path: Path) -> None:
    path = _kit(tmp_path)
    with pytest.raises(ArchiveLimitError, match="too large") as info:
        read_kit(path, Limits(max_member_bytes=5))
    assert (info.value.file, info.value.actual) == ("README.md", "6 bytes")
    with pytest.raises(ArchiveLimitError, match="too large in total"):
        read_kit(path, Limits(max_total_bytes=200))
    with pytest.raises(ArchiveLimitError, match="too many"):
        read_kit(path, Limits(max_members=3))
    with pytest.raises(ArchiveLimitError, match="member is too large") as info:
        read_kit(path, Limits(max_manifest_bytes=100))
    assert info.value.file == "MANIFEST"
    with pytest.raises(ArchiveLimitError, match="archive is too large"):
        read_kit(path, Limits(max_archive_bytes=100))
    assert len(read_kit(path, Limits(max_members=4)).files) == 4


def test_members_beyond_the_limit_are_refused_even_if_manifest_lists_few(tmp_path: Path) -> None:
    """MANIFEST lists one file, within the limit; the archive goes on past it."""
    listed = {"README.md": FILES["README.md"]}
    tar = _member("MANIFEST", render_manifest(manifest_entries(listed)))
    tar += _member("README.md", FILES["README.md"]) + _member("evidence/a.jsonl", b"{}\n")
    with pytest.raises(ArchiveLimitError, match="the kit has too many members") as info:
        read_kit(_write(tmp_path, _gzip(_end(tar))), Limits(max_members=2))
    assert (info.value.file, info.value.expected) == ("evidence/a.jsonl", "at most 2")


def test_a_manifest_listing_more_bytes_than_a_kit_may_hold_is_refused_first(
    tmp_path: Path,
) -> None:
    files = _files(big=b"x" * 4000)
    limit = len(files["MANIFEST"]) + 100  # MANIFEST itself fits; what it lists does not
    with pytest.raises(ArchiveLimitError, match="MANIFEST lists more bytes") as info:
        read_kit(_kit(tmp_path, files), Limits(max_total_bytes=limit))
    assert info.value.file == "MANIFEST"


def test_an_oversized_receipt_is_refused_before_it_is_read(tmp_path: Path) -> None:
    files = _files()
    receipt = _info("receipt.dsse.json", 2 * 1024 * 1024).tobuf(tarfile.PAX_FORMAT)
    with pytest.raises(ReceiptLimitError):
        read_kit(_write(tmp_path, _gzip(_members(files) + receipt)))


def test_a_decompression_bomb_is_refused_as_soon_as_it_passes_the_end(tmp_path: Path) -> None:
    bomb = _gzip(_end(_members(_files())) + b"\0" * (64 * 1024 * 1024))
    with pytest.raises(NonCanonicalArchiveError, match="goes on after its end-of-archive"):
        read_kit(_write(tmp_path, bomb))


def test_the_stream_limit_bounds_inflation() -> None:
    stream = Gunzip(io.BytesIO(_gzip(b"\0" * (8 * 1024 * 1024))), StreamLimits(10**9, 10**6), "k")
    with pytest.raises(ArchiveLimitError, match="decompresses to too many bytes"):
        stream.read(2 * 10**6)
    assert len(stream.out) <= 10**6 + 1


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"not gzip at all", "not a gzip file"),
        (b"\x1f\x8b\x08\x08\x00\x00\x00\x00\x02\xffname\x00", "header is not servekit's"),
        (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff garbage", "damaged"),
    ],
)
def test_a_damaged_or_foreign_gzip_is_refused(tmp_path: Path, data: bytes, message: str) -> None:
    with pytest.raises(GzipStreamError, match=message):
        read_kit(_write(tmp_path, data))


def test_a_truncated_archive_is_refused(tmp_path: Path) -> None:
    path = _kit(tmp_path, _files(big=os.urandom(50_000)))
    path.write_bytes(path.read_bytes()[:-2000])
    with pytest.raises(GzipStreamError, match="truncated"):
        read_kit(path)


# mtime=0: the same test id in every pytest-xdist worker (the clock made them differ)
@pytest.mark.parametrize("after", [b"\0", b"junk", gzip.compress(b"", mtime=0)])
def test_anything_after_the_gzip_member_is_refused(tmp_path: Path, after: bytes) -> None:
    path = _kit(tmp_path)
    path.write_bytes(path.read_bytes() + after)
    with pytest.raises(GzipStreamError, match="data follows the gzip member"):
        read_kit(path)


@pytest.mark.parametrize(
    "tail",
    [
        _member("zz", b"x"),  # after the end-of-archive blocks: `tar -i` reads it
        b"\0" * 512 + b"hidden",  # bytes in the zero padding
    ],
)
def test_bytes_after_the_end_of_archive_are_refused(tmp_path: Path, tail: bytes) -> None:
    tar = _end(_members(_files()))
    path = _write(tmp_path, _gzip(tar[: 1024 + len(_members(_files()))] + tail + b"\0" * 10240))
    with pytest.raises(NonCanonicalArchiveError, match="goes on after its end-of-archive"):
        read_kit(path)


def test_hidden_bytes_in_a_members_padding_are_refused(tmp_path: Path) -> None:
    files = _files()
    tar = bytearray(_end(_members(files)))
    manifest_end = 512 + len(files["MANIFEST"])
    tar[manifest_end] = ord("!")
    with pytest.raises(NonCanonicalArchiveError) as info:
        read_kit(_write(tmp_path, _gzip(bytes(tar))))
    assert f"offset {manifest_end} " in str(info.value.actual)


def test_a_missing_kit_is_a_read_error(tmp_path: Path) -> None:
    with pytest.raises(ReadError, match="does not exist"):
        read_kit(tmp_path / "nope.tar.gz")


# --- unpacked directories --------------------------------------------------------------


def _directory(tmp_path: Path) -> Path:
    root = tmp_path / "kit"
    for name, data in _files().items():
        (root / name).parent.mkdir(parents=True, exist_ok=True, mode=0o755)
        (root / name).write_bytes(data)
        (root / name).chmod(0o755 if name == "deploy/launch.sh" else 0o644)
    root.chmod(0o755)
    return root


def test_a_directory_kit_is_read(tmp_path: Path) -> None:
    assert dict(read_kit(_directory(tmp_path)).files) == _files()


@pytest.mark.parametrize(
    ("name", "mode"), [("README.md", 0o664), ("README.md", 0o755), ("deploy/launch.sh", 0o644)]
)
def test_directory_files_need_their_canonical_mode(tmp_path: Path, name: str, mode: int) -> None:
    root = _directory(tmp_path)
    (root / name).chmod(mode)
    with pytest.raises(MemberMetadataError, match="canonical mode") as info:
        read_kit(root)
    assert (info.value.file, info.value.actual) == (name, f"{mode:04o}")


def test_a_hard_linked_file_is_refused(tmp_path: Path) -> None:
    root = _directory(tmp_path)
    os.link(root / "README.md", tmp_path / "elsewhere")
    with pytest.raises(MemberMetadataError, match="hard links") as info:
        read_kit(root)
    assert (info.value.file, info.value.actual) == ("README.md", "2 links")


def test_a_world_writable_directory_is_refused(tmp_path: Path) -> None:
    root = _directory(tmp_path)
    (root / "deploy").chmod(0o777)
    with pytest.raises(MemberMetadataError, match="written by others"):
        read_kit(root)


def test_the_kit_directory_itself_must_not_be_writable_by_others(tmp_path: Path) -> None:
    root = _directory(tmp_path)
    root.chmod(0o777)
    with pytest.raises(MemberMetadataError, match="written by others") as info:
        read_kit(root)
    assert (info.value.file, info.value.actual) == (str(root), "0777")


@pytest.mark.parametrize("empty", ["hooks", "deploy/hooks.d", "a/b/c"])
def test_an_empty_directory_is_an_extra_entry(tmp_path: Path, empty: str) -> None:
    root = _directory(tmp_path)
    (root / empty).mkdir(parents=True, mode=0o755)
    with pytest.raises(ExtraFileError, match="no kit file") as info:
        read_kit(root)
    assert info.value.file == empty


def test_a_fifo_swapped_in_after_the_listing_is_refused_not_waited_on(tmp_path: Path) -> None:
    """The entry was a file when listed; by the time it is opened it is a FIFO with no
    writer, which a blocking open would wait on for ever."""
    os.mkfifo(tmp_path / "README.md")
    outcome: list[BaseException] = []

    def read() -> None:
        try:
            _read_regular(tmp_path / "README.md", "README.md", _Budget(Limits()))
        except BaseException as exc:  # handed to the test thread
            outcome.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=10)
    assert not reader.is_alive(), "opening a FIFO blocked"
    assert isinstance(outcome[0], UnsafeArchiveError), outcome
    assert outcome[0].actual == "a device, FIFO or socket"


def test_a_directory_nested_past_any_kit_path_is_refused_not_a_recursion_error(
    tmp_path: Path,
) -> None:
    root = _directory(tmp_path)
    depth, directory = 0, os.O_RDONLY | os.O_DIRECTORY
    fd = os.open(root, directory)
    try:
        while depth < 1200:  # deeper than the recursion limit; through handles, as by path
            os.mkdir("d", 0o755, dir_fd=fd)  # name each level costs more than the last
            fd, parent = os.open("d", directory, dir_fd=fd), fd
            os.close(parent)
            depth += 1
        os.close(os.open("f", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd))
        with pytest.raises(UnsafeArchiveError, match="longer than any kit holds") as info:
            read_kit(root)
        assert info.value.actual == "101 bytes"
    finally:  # shutil.rmtree (and so pytest's clean-up of old runs) recurses per level
        with contextlib.suppress(FileNotFoundError):
            os.unlink("f", dir_fd=fd)
        for _ in range(depth):
            fd, child = os.open("..", directory, dir_fd=fd), fd
            os.close(child)
            os.rmdir("d", dir_fd=fd)
        os.close(fd)


def test_directory_kits_refuse_fifos_and_unreadable_files(tmp_path: Path) -> None:
    root = _directory(tmp_path)
    os.mkfifo(root / "pipe")
    with pytest.raises(UnsafeArchiveError, match="not a regular file"):
        read_kit(root)
    (root / "pipe").unlink()
    (root / "secret").write_text("x")
    (root / "secret").chmod(0)
    if os.geteuid() == 0:
        pytest.skip("root reads any file")
    with pytest.raises(ReadError):
        read_kit(root)


def test_member_names() -> None:
    assert kit_member_name("a/b") == "a/b"
    with pytest.raises(UnsafeArchiveError):
        kit_member_name("./a")
    with pytest.raises(UnsafeArchiveError, match="absolute path"):
        kit_member_name("/etc/passwd")
    with pytest.raises(UnsafeArchiveError, match="leaves the kit") as info:
        kit_member_name("deploy/../../x")
    assert info.value.expected == "no '..' part"


@pytest.mark.parametrize("offset", [0, 1, 511, 512, 513, 4095, 20479])
def test_the_first_difference_is_found_at_any_offset(offset: int) -> None:
    canonical = bytes(range(256)) * 80  # 20 480 bytes
    stream = bytearray(canonical)
    stream[offset] ^= 0xFF
    stream[-1] ^= 0xFF if offset != len(canonical) - 1 else 0
    assert _first_difference(bytes(stream), canonical) == offset


def test_the_first_difference_of_a_prefix_is_its_end() -> None:
    canonical = b"\0" * 2000
    assert _first_difference(canonical[:1500], canonical) == 1500
    assert _first_difference(canonical + b"\0", canonical) == 2000


def test_a_manifest_size_of_thousands_of_digits_is_a_format_error(tmp_path: Path) -> None:
    """Unsigned MANIFEST bytes are bounded before a number is parsed: no traceback."""
    files = _files()
    line = next(x for x in files["MANIFEST"].decode().splitlines() if x.endswith("README.md"))
    huge = line.replace(f"  {len(files['README.md'])}  ", "  " + "9" * 5000 + "  ")
    files["MANIFEST"] = files["MANIFEST"].replace(line.encode(), huge.encode())
    kit = _kit(tmp_path, files)
    with pytest.raises(FileChangedError, match="not in the servekit manifest format") as info:
        read_kit(kit)
    assert info.value.file == "MANIFEST"
    done = servekit(
        "verify", "kit", str(kit), "--trust", str(ROOT / "tests/assets/keys/trust.toml")
    )
    assert done.returncode == 10 and "Traceback" not in done.stderr, done.stderr
