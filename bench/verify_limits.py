"""Time and peak memory of ``verify kit`` on each hostile input, beside a valid kit.

Not a test: it prints what one run on this machine measured. Every hostile input must
be refused with its error class quickly and in bounded memory; the valid kit (the test
fixture, and the largest example kit built here) is the yardstick.

Inputs: every golden fixture in ``tests/assets/`` (``kit_*.tar.gz``), and larger ones
built here: a 1 GiB decompression bomb (about 1 MB of gzip), a receipt nested 500 000
levels deep, a header claiming 8 GiB, a 2 000-member kit of empty files, two 30 MiB
members an unsigned ``MANIFEST`` admits in a stream that differs from the canonical one
only in its last byte (the most work the archive reader does before any signature is
checked), and a ``package.yaml`` YAML alias bomb (9**10 leaves from 600 bytes) parsed on
its own.

Peak memory is ``tracemalloc``'s peak of Python allocations during the call (what the
verifier itself holds; zlib's internal buffers are small and fixed).

Usage: ``.venv/bin/python bench/verify_limits.py`` (from the repository root).
"""

from __future__ import annotations

import hashlib
import sys
import tarfile
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.assets.make_kit_fixtures import (  # noqa: E402
    _archive,
    _end,
    _gzip,
    _info,
    _member,
    private_key,
)

from servekit.errors import Error  # noqa: E402
from servekit.kit.build import build_kit  # noqa: E402
from servekit.package.load import parse_package  # noqa: E402
from servekit.receipts.keys import load_trust_store  # noqa: E402
from servekit.verify.kit import verify_kit  # noqa: E402

ASSETS = ROOT / "tests" / "assets"
TRUST = load_trust_store(ASSETS / "keys" / "trust.toml")
PUBLISHER = load_trust_store(
    ASSETS / "keys" / "publisher.pub", bare_key=True
)  # any package, for K3
K3 = ROOT / "examples" / "packages" / "kimi-k3-8xb300"


def _measure(call: Callable[[], object]) -> tuple[str, float, int]:
    tracemalloc.start()
    start = time.perf_counter()
    try:
        call()
        outcome = "verified"
    except Error as exc:
        outcome = f"{type(exc).__name__} ({exc.exit_code})"
    seconds = time.perf_counter() - start
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return outcome, seconds, peak


def _valid_files() -> dict[str, bytes]:
    with tarfile.open(ASSETS / "kit_valid.tar.gz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}  # type: ignore[union-attr]


def _built(tmp: Path) -> dict[str, Path]:
    files = _valid_files()
    manifest = _member("MANIFEST", files["MANIFEST"])
    bomb = _gzip(b"\0" * (1024 * 1024 * 1024))
    nested = _archive({**files, "receipt.dsse.json": b"[" * 500_000 + b"]" * 500_000})
    claim = _gzip(manifest + _info("README.md", 8**11 - 1).tobuf(tarfile.PAX_FORMAT))
    many = {f"evidence/e{i:04d}": b"" for i in range(1999)}
    crowd = _gzip(_end(manifest + b"".join(_member(p, d) for p, d in sorted(many.items()))))
    out = {
        "bomb-1GiB": bomb,
        "receipt-nested-500k": nested,
        "header-claims-8GiB": claim,
        "2000-unlisted-members": crowd,
        "60MiB-differs-at-the-end": _differs_at_the_end(),
    }
    for name, data in out.items():
        (tmp / f"{name}.tar.gz").write_bytes(data)
    paths = {name: tmp / f"{name}.tar.gz" for name in out}
    key = private_key("publisher", tmp)
    (tmp / "k3-valid.tar.gz").write_bytes(build_kit(K3, key).archive)
    paths["k3-valid (largest example)"] = tmp / "k3-valid.tar.gz"
    return paths


def _differs_at_the_end() -> bytes:
    """Two 30 MiB members listed by an unsigned MANIFEST, the stream's last byte not zero."""
    data = b"\0" * (30 * 1024 * 1024)
    digest = hashlib.sha256(data).hexdigest()
    listing = "".join(f"{digest}  {len(data)}  a/big{i}\n" for i in (1, 2))
    manifest = f"servekit-manifest/v1\n{listing}".encode()
    tar = _end(_member("MANIFEST", manifest) + _member("a/big1", data) + _member("a/big2", data))
    return _gzip(tar[:-1] + b"\1")


LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [" + ", ".join([f"*{chr(97 + i)}"] * 9) + "]\n"
    for i in range(9)
)


def main() -> None:
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        kits = {p.name.removesuffix(".tar.gz"): p for p in sorted(ASSETS.glob("kit_*.tar.gz"))}
        kits |= _built(Path(tmp))
        for name, path in kits.items():
            size = path.stat().st_size
            trust = PUBLISHER if name.startswith("k3") else TRUST
            rows.append((name, size, *_measure(lambda p=path, t=trust: verify_kit(p, t))))
    alias = _measure(lambda: parse_package(Path("package.yaml"), LAUGHS))
    rows.append(("package.yaml alias bomb", len(LAUGHS), *alias))
    print(f"{'input':34} {'bytes':>10} {'result':34} {'ms':>9} {'peak MiB':>9}")
    for name, size, outcome, seconds, peak in rows:
        print(f"{name:34} {size:>10} {outcome:34} {seconds * 1000:>9.1f} {peak / 2**20:>9.2f}")
    print(f"python {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
