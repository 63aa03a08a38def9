"""One stream's cost of hashing page-cache bytes, against OpenSSL on one core.

Not a test: it prints figures measured in one run on this machine. It answers whether
asking the kernel to map pages in bulk would speed up ``verify weights``' mapped reader.

1. write ``--size-gib`` (default 2) of random bytes to one file under ``--dir``: its pages
   are in the page cache as the writes left them (a downloaded tree), then, evicted and
   read back in, as readahead leaves them (a tree read before);
2. measure ``openssl speed -evp sha256`` on one core (the peer: hashing bytes already in
   the CPU's cache);
3. per round (``--rounds``, default 3) and per way into the cache, hash the file in one process four ways: servekit's
   mapped reader (``servekit.weights.mapped.mapped_digest``), the same windows mapped with
   ``MAP_POPULATE``, with ``MADV_POPULATE_READ`` before each chunk, and ``readinto`` a
   reused 1 MiB buffer; print GB/s, the user and kernel CPU seconds, and the ratio to
   OpenSSL's rate.

Usage: ``.venv/bin/python bench/page_cache_stream.py [--size-gib 2] [--dir /tmp] [--rounds 3]``
"""

from __future__ import annotations

import argparse
import hashlib
import mmap
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from verify_weights import GiB, openssl_rate

from servekit.weights.mapped import MAP_CHUNK, MAP_WINDOW, mapped_digest

MADV_POPULATE_READ = getattr(mmap, "MADV_POPULATE_READ", 22)  # Linux 5.14; Python 3.11 lacks it


def _windows(fd: int, size: int, populate: bool, per_chunk: bool) -> str:
    digest = hashlib.sha256()
    for start in range(0, size, MAP_WINDOW):
        length = min(MAP_WINDOW, size - start)
        flags = mmap.MAP_SHARED | (mmap.MAP_POPULATE if populate else 0)
        with mmap.mmap(fd, length, flags=flags, prot=mmap.PROT_READ, offset=start) as region:
            region.madvise(mmap.MADV_SEQUENTIAL)
            with memoryview(region) as view:
                for offset in range(0, length, MAP_CHUNK):
                    if per_chunk:
                        region.madvise(MADV_POPULATE_READ, offset, min(MAP_CHUNK, length - offset))
                    with view[offset : offset + MAP_CHUNK] as part:
                        digest.update(part)
    return digest.hexdigest()


def _readinto(fd: int, size: int) -> str:
    digest, buffer = hashlib.sha256(), bytearray(1 << 20)
    view = memoryview(buffer)
    os.lseek(fd, 0, os.SEEK_SET)  # the duplicate shares the offset
    with os.fdopen(os.dup(fd), "rb", buffering=0) as raw:
        while count := raw.readinto(view):
            digest.update(view[:count])
    return digest.hexdigest()


WAYS: dict[str, Callable[[int, int], str]] = {
    "servekit mapped reader": mapped_digest,
    "MAP_POPULATE": lambda fd, size: _windows(fd, size, populate=True, per_chunk=False),
    "MADV_POPULATE_READ a chunk": lambda fd, size: _windows(fd, size, False, per_chunk=True),
    "readinto 1 MiB": _readinto,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-gib", type=float, default=2.0)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    size = int(args.size_gib * GiB)
    with tempfile.NamedTemporaryFile(dir=args.dir, prefix="page-cache-stream-") as tmp:
        for _ in range(0, size, 64 << 20):
            tmp.write(os.urandom(min(64 << 20, size - tmp.tell())))
        tmp.flush()
        os.fsync(tmp.fileno())
        fd = tmp.fileno()
        peer = openssl_rate()
        print(f"load average {os.getloadavg()[0]:.2f}; openssl sha256, one core: {peer:.3f} GB/s")
        digests = set()
        for cached_by in ("writing it", "reading it"):
            if cached_by == "reading it":  # evict the written pages, then read them back in
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                _readinto(fd, size)
            print(f"\nin the page cache by {cached_by}")
            print(f"{'way':28s} {'GB/s':>6s} {'user s':>7s} {'kernel s':>8s} {'x openssl':>9s}")
            for _ in range(args.rounds):
                for name, way in WAYS.items():
                    before, start = os.times(), time.perf_counter()
                    digests.add(way(fd, size))
                    rate = size / (time.perf_counter() - start) / 1e9
                    after = os.times()
                    print(
                        f"{name:28s} {rate:6.3f} {after.user - before.user:7.2f} "
                        f"{after.system - before.system:8.2f} {rate / peer:9.2f}"
                    )
        assert len(digests) == 1, "the ways disagree on the digest"
        print(f"load average at the end {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
