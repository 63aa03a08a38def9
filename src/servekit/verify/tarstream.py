"""Read a kit's ``.tar.gz`` byte by byte, trusting no tar reader.

Steps (each refusal is its own :class:`~servekit.errors.UnsafeArchiveError` subclass):

  1. the file starts with servekit's 10-byte gzip header and is exactly one gzip member
     that ends the file (:class:`GzipStreamError`); decompression is bounded
     (:class:`ArchiveLimitError`), so a small file cannot become gigabytes;
  2. every 512-byte header is parsed strictly from the raw bytes, before ``tarfile``
     sees the stream: checksum, ``ustar`` magic, octal fields (:class:`TarHeaderError`);
     extended headers are refused (:class:`ExtendedHeaderError`), and so are links,
     devices, FIFOs, unsafe names and duplicates (:class:`UnsafeArchiveError`), modes,
     owners and mtimes that are not canonical (:class:`MemberMetadataError`) and members
     out of path order (:class:`MemberOrderError`);
  3. a :class:`Gate` sees each member's name and size before its data is read (the kit
     reader refuses there anything MANIFEST does not list, at the size it lists);
  4. after the end-of-archive blocks the rest of the stream is drained, and the whole
     decompressed stream must equal :func:`~servekit.receipts.archive.render_tar` of the
     members read (:class:`NonCanonicalArchiveError`, naming the first differing offset);
  5. ``tarfile`` must then read exactly those members, as a second opinion.

GNU tar, ``tarfile`` and this reader therefore see the same files, or nothing is accepted.
"""

from __future__ import annotations

import io
import tarfile
import zlib
from dataclasses import dataclass
from typing import BinaryIO, Protocol

from servekit.errors import (
    ArchiveLimitError,
    ExtendedHeaderError,
    GzipStreamError,
    MemberMetadataError,
    MemberOrderError,
    NonCanonicalArchiveError,
    TarHeaderError,
    UnsafeArchiveError,
)
from servekit.package.files import MANIFEST_FILE
from servekit.receipts.archive import kit_file, member_mode, render_tar, tar_length
from servekit.receipts.manifest import is_kit_path

BLOCK = 512
GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
"""deflate, no flags, mtime 0, maximum compression, OS unknown: what ``kit build`` writes."""
USTAR_MAGIC = b"ustar\x0000"
EXTENDED = {b"x": "a pax header", b"g": "a pax global header", b"L": "a GNU long name"}
EXTENDED |= {b"K": "a GNU long link name", b"X": "a Solaris extended header"}
LINKS = {b"1": "a hard link", b"2": "a symlink", b"3": "a character device"}
LINKS |= {b"4": "a block device", b"6": "a FIFO"}
HINT = "do not unpack or deploy this kit; obtain it again from the publisher"
_CHUNK = 64 * 1024
_INFLATE = 1024 * 1024  # at most this much output per inflate call


class Gate(Protocol):
    """Decides on each member: by name and size before its data is read, then by its bytes."""

    def admit(self, name: str, size: int) -> None: ...

    def accept(self, name: str, data: bytes) -> None: ...


@dataclass(frozen=True)
class StreamLimits:
    """Bounds on the compressed file and the decompressed stream."""

    max_archive_bytes: int
    max_stream_bytes: int


@dataclass(frozen=True)
class Member:
    """A member as read from the raw stream."""

    name: str
    data: bytes
    mtime: int


@dataclass(frozen=True)
class ScannedArchive:
    """Every member of a canonical kit archive, in order, and their common mtime."""

    members: tuple[Member, ...]
    mtime: int | None


# --- step 1: one bounded gzip member ----------------------------------------------------


class Gunzip:
    """Decompress the single gzip member of ``fh`` on demand, keeping every output byte."""

    def __init__(self, fh: BinaryIO, limits: StreamLimits, source: str) -> None:
        self.fh, self.limits, self.source = fh, limits, source
        self.inflate = zlib.decompressobj(wbits=31)
        self.out = bytearray()
        self.pos = 0
        self.read_in = 0
        self._pending = self._header()

    def _gzip(self, message: str, actual: str) -> GzipStreamError:
        expected = "one gzip member, servekit's header, nothing after it"
        return GzipStreamError(
            message, file=self.source, expected=expected, actual=actual, hint=HINT
        )

    def _read(self) -> bytes:
        data = self.fh.read(_CHUNK)
        self.read_in += len(data)
        if self.read_in > self.limits.max_archive_bytes:
            raise self._too_large("the kit archive is too large", self.limits.max_archive_bytes)
        return data

    def _too_large(self, message: str, most: int) -> ArchiveLimitError:
        return ArchiveLimitError(
            message,
            file=self.source,
            expected=f"<= {most} bytes",
            actual=f"more than {most} bytes",
            hint=HINT,
        )

    def _header(self) -> bytes:
        head = self._read()
        if head[:2] != GZIP_HEADER[:2]:
            raise self._gzip(
                "the kit is not a gzip file", f"starts with {head[:4].hex() or 'nothing'}"
            )
        if head[:10] != GZIP_HEADER:
            raise self._gzip("the kit's gzip header is not servekit's", f"{head[:10].hex()}")
        return head

    def _more(self) -> bool:
        """Decompress one more piece; False once the gzip member has ended."""
        if self.inflate.eof:
            return False
        data = self.inflate.unconsumed_tail or self._pending or self._read()
        self._pending = b""
        if not data:
            raise self._gzip("the gzip stream is truncated", "the file ends inside the member")
        room = min(self.limits.max_stream_bytes - len(self.out) + 1, _INFLATE)
        try:
            self.out += self.inflate.decompress(data, room)
        except zlib.error as exc:
            raise self._gzip("the gzip stream is damaged", str(exc)) from exc
        if len(self.out) > self.limits.max_stream_bytes:
            most = self.limits.max_stream_bytes
            raise self._too_large("the kit decompresses to too many bytes", most)
        return True

    def read(self, size: int) -> bytes:
        """Up to ``size`` more bytes of the tar stream (fewer only at its end)."""
        while len(self.out) - self.pos < size and self._more():
            pass
        chunk = bytes(self.out[self.pos : self.pos + size])
        self.pos += len(chunk)
        return chunk

    def finish(self, canonical_bytes: int) -> bytes:
        """Drain the member, require that nothing follows it, and return the whole stream.

        The stream may not run past ``canonical_bytes`` (the canonical rendering's length):
        whatever an archive hides after its end is refused as soon as it shows.
        """
        while len(self.out) <= canonical_bytes and self._more():
            pass
        if len(self.out) > canonical_bytes:
            raise NonCanonicalArchiveError(
                "the archive goes on after its end-of-archive blocks",
                file=self.source,
                expected=f"{canonical_bytes} bytes of canonical tar",
                actual=f"more than {canonical_bytes} bytes",
                hint=HINT,
            )
        after = self.inflate.unused_data or self._pending or self.fh.read(1)
        if after:
            raise self._gzip(
                "data follows the gzip member (another member, or trailing bytes)",
                f"{after[:8].hex()}... after the end of the member",
            )
        whole, self.out = bytes(self.out), bytearray()  # one copy of the stream, not two
        return whole


# --- step 2: strict raw headers ----------------------------------------------------------


def _header_error(name: str, expected: str, actual: str) -> TarHeaderError:
    return TarHeaderError(
        "a tar header is malformed or of a kind servekit never writes",
        file=name,
        expected=expected,
        actual=actual,
        hint=HINT,
    )


def _octal(block: bytes, start: int, width: int, name: str, field: str) -> int:
    """A numeric field exactly as ``tarfile`` writes it: octal digits, then one NUL."""
    raw = block[start : start + width]
    digits = raw[:-1]
    if raw[-1:] != b"\0" or not digits or digits.strip(b"01234567"):
        raise _header_error(name, f"{field}: {width - 1} octal digits and a NUL", repr(raw))
    return int(digits, 8)


def _text(raw: bytes) -> str:
    return raw.split(b"\0", 1)[0].decode("utf-8", "backslashreplace")


def _check_checksum(block: bytes, offset: int) -> None:
    """The checksum as ``tarfile`` writes it: six octal digits, NUL, space; unsigned sum."""
    name = _text(block[:100]) or f"(header at offset {offset})"
    digits, actual = block[148:154], sum(block[:148]) + 8 * 0x20 + sum(block[156:])
    if block[154:156] != b"\0 " or digits.strip(b"01234567") or int(digits, 8) != actual:
        raise _header_error(name, f"checksum {actual:06o}", f"{block[148:156]!r}")


def _check_magic(block: bytes, name: str) -> None:
    if block[257:265] != USTAR_MAGIC:
        raise _header_error(name, "ustar magic 'ustar\\x0000'", repr(block[257:265]))


def _check_type(block: bytes, name: str) -> None:
    kind = block[156:157]
    if kind in EXTENDED:
        raise ExtendedHeaderError(
            "the archive holds an extended header, which can rename or resize the next member",
            file=name,
            expected="plain ustar headers only",
            actual=EXTENDED[kind],
            hint=HINT,
        )
    if kind in LINKS:
        target = _text(block[157:257])
        actual = f"{LINKS[kind]}" + (f" to {target!r}" if target else "")
        raise UnsafeArchiveError(
            "an archive member is not a regular file",
            file=name,
            expected="a regular file",
            actual=actual,
            hint=HINT,
        )
    if kind != b"0":
        raise _header_error(name, "type '0' (a regular file)", f"type {kind!r}")


def _check_name(block: bytes) -> str:
    raw = block[:100].split(b"\0", 1)[0]
    name = raw.decode("utf-8", "backslashreplace")
    if block[345:500].strip(b"\0"):
        raise _header_error(name, "an empty ustar prefix field", repr(_text(block[345:500])))
    if name.startswith("/"):
        raise _unsafe("an archive member has an absolute path", name, "a relative path")
    if ".." in name.split("/"):
        raise _unsafe("an archive member leaves the kit", name, "no '..' part")
    if not is_kit_path(name):
        raise _unsafe(
            "an archive member name is not a plain kit path", name, "[A-Za-z0-9._+-] parts"
        )
    return name


def _unsafe(message: str, name: str, expected: str) -> UnsafeArchiveError:
    return UnsafeArchiveError(message, file=name, expected=expected, actual=name, hint=HINT)


def _metadata(name: str, field: str, expected: str, actual: str) -> MemberMetadataError:
    return MemberMetadataError(
        f"an archive member's {field} is not the canonical one",
        file=name,
        expected=expected,
        actual=actual,
        hint=HINT,
    )


def _check_metadata(block: bytes, name: str) -> int:
    """Mode, owner and names are canonical; returns the member's mtime."""
    mode = _octal(block, 100, 8, name, "mode")
    if mode != member_mode(name):
        raise _metadata(name, "mode", f"{member_mode(name):04o}", f"{mode:04o}")
    owner = (_octal(block, 108, 8, name, "uid"), _octal(block, 116, 8, name, "gid"))
    if owner != (0, 0):
        raise _metadata(name, "owner", "uid 0, gid 0", f"uid {owner[0]}, gid {owner[1]}")
    names = block[265:329]
    if names.strip(b"\0"):
        raise _metadata(name, "user or group name", "empty", repr(_text(names[:32])))
    return _octal(block, 136, 12, name, "mtime")


# --- the scan -----------------------------------------------------------------------------


class _Scan:
    """Walk the raw tar stream, one strict header at a time."""

    def __init__(self, stream: Gunzip, gate: Gate) -> None:
        self.stream, self.gate = stream, gate
        self.members: list[Member] = []
        self.names: set[str] = set()
        self.folded: set[str] = set()  # names, case-folded
        self.directories: set[str] = set()  # every member's parent directories, case-folded
        self.mtime: int | None = None

    def run(self) -> None:
        while True:
            offset = self.stream.pos
            block = self.stream.read(BLOCK)
            if len(block) < BLOCK:
                raise _header_error("(end of archive)", "two zero blocks", "the stream ends first")
            if not block.strip(b"\0"):
                return
            _check_checksum(block, offset)
            self.members.append(self.member(block))

    def member(self, block: bytes) -> Member:
        first = _text(block[:100])
        _check_type(block, first)
        _check_magic(block, first)
        name = _check_name(block)
        mtime = _check_metadata(block, name)
        self.order(name, mtime)
        size = _octal(block, 124, 12, name, "size")
        self.gate.admit(name, size)
        data = self.stream.read(size)
        if len(data) < size:
            raise _header_error(name, f"{size} bytes of data", f"{len(data)} bytes, then the end")
        self.gate.accept(name, data)
        self.stream.read(-size % BLOCK)  # padding: the canonical comparison checks it
        return Member(name, data, mtime)

    def order(self, name: str, mtime: int) -> None:
        previous = self.members[-1].name if self.members else None
        if previous is None and name != MANIFEST_FILE:
            raise _order("the first member of a kit must be MANIFEST", name, MANIFEST_FILE)
        if name in self.names:
            raise _unsafe("the kit holds the same name twice", name, "each name once")
        self.names.add(name)
        self.disk_layout(name)
        if previous is not None and name.encode() <= previous.encode():
            raise _order(
                "the kit's members are not in path order", name, f"a path after {previous}"
            )
        if self.mtime is not None and mtime != self.mtime:
            raise _metadata(name, "mtime", str(self.mtime), str(mtime))
        self.mtime = mtime

    def disk_layout(self, name: str) -> None:
        """Refuse names no disk can hold side by side: two that differ only in case (one
        overwrites the other on a case-insensitive disk) and a file that is also a directory
        of another member (``deploy`` and ``deploy/x``)."""
        folded = name.casefold()
        parents = [folded.rsplit("/", n)[0] for n in range(1, folded.count("/") + 1)]
        if folded in self.folded:
            raise _unsafe(
                "the kit holds two names that differ only in case", name, "names unique in any case"
            )
        if folded in self.directories or any(p in self.folded for p in parents):
            raise _unsafe(
                "a kit member is a file and also the directory of another member",
                name,
                "each path either a file or a directory",
            )
        self.folded.add(folded)
        self.directories.update(parents)


def _order(message: str, name: str, expected: str) -> MemberOrderError:
    return MemberOrderError(message, file=name, expected=expected, actual=name, hint=HINT)


# --- steps 4 and 5 ------------------------------------------------------------------------


def _first_difference(stream: bytes, canonical: bytes) -> int:
    """The first offset where the two differ, comparing a block-sized slice at a time (a
    byte-by-byte loop takes seconds on a 64 MiB stream that differs only at its end)."""
    limit = min(len(stream), len(canonical))
    start = next(
        (i for i in range(0, limit, BLOCK) if stream[i : i + BLOCK] != canonical[i : i + BLOCK]),
        limit,
    )
    end = min(start + BLOCK, limit)
    return next((i for i in range(start, end) if stream[i] != canonical[i]), end)


def _check_canonical(stream: bytes, canonical: bytes, source: str) -> None:
    if stream != canonical:
        offset = _first_difference(stream, canonical)
        raise NonCanonicalArchiveError(
            "the archive's bytes are not the canonical rendering of its members",
            file=source,
            expected=f"{len(canonical)} bytes of canonical tar",
            actual=f"{len(stream)} bytes, first difference at offset {offset} "
            f"(block {offset // BLOCK}, byte {offset % BLOCK})",
            hint=HINT,
        )


def _second_opinion(stream: bytes, members: tuple[Member, ...], source: str) -> None:
    """``tarfile`` reads the same names, sizes and bytes (it cannot differ, or step 4 failed)."""
    names, same = [], True
    with tarfile.open(fileobj=io.BytesIO(stream), mode="r:") as tar:
        for index, info in enumerate(tar):
            handle = tar.extractfile(info)
            data = handle.read() if handle else None  # one member held at a time
            names.append(info.name)
            mine = members[index] if index < len(members) else None
            same = same and mine is not None and (mine.name, mine.data) == (info.name, data)
    if not same or len(names) != len(members):
        raise NonCanonicalArchiveError(
            "tarfile reads this archive differently from servekit's reader",
            file=source,
            expected=", ".join(m.name for m in members),
            actual=", ".join(names),
            hint=HINT,
        )


def scan_archive(fh: BinaryIO, limits: StreamLimits, source: str, gate: Gate) -> ScannedArchive:
    """Read the canonical kit archive in ``fh``, or raise the specific refusal."""
    stream = Gunzip(fh, limits, source)  # 1
    scan = _Scan(stream, gate)  # 2, 3
    scan.run()
    members = tuple(scan.members)
    whole = stream.finish(tar_length(len(m.data) for m in members))  # 4
    canonical = render_tar((kit_file(m.name, m.data) for m in members), scan.mtime or 0)
    _check_canonical(whole, canonical, source)
    del canonical
    _second_opinion(whole, members, source)  # 5
    return ScannedArchive(members, scan.mtime)
