"""Differential: what GNU tar and Python's tarfile write from a kit, against what verifies.

For every golden fixture, and for seeded mutations of the valid kit's raw tar headers,
the archive is unpacked with GNU tar (``tar -xzf``, as a buyer would, and with
``--ignore-zeros``) and with ``tarfile`` (the ``data`` filter), and verified. Either
``verify kit`` refuses the archive, or every file each extractor wrote (and nothing
else) is exactly a verified file with its canonical mode. An archive that verifies
but unpacks differently is the hole issue 10 closes.
"""

from __future__ import annotations

import gzip
import os
import random
import shutil
import stat
import subprocess
import tarfile
from pathlib import Path

import pytest

from servekit.errors import Error
from servekit.receipts.archive import member_mode
from servekit.receipts.keys import load_trust_store
from servekit.verify.kit import KitVerification, verify_kit
from tests.kit.helpers import ASSETS, KEYS

TRUST = load_trust_store(KEYS / "trust.toml")
FIXTURES = sorted(ASSETS.glob("kit_*.tar.gz"))
GNU_TAR = shutil.which("tar")
Written = dict[str, tuple[str, bytes | None, int]]

pytestmark = pytest.mark.skipif(GNU_TAR is None, reason="GNU tar is not installed")


def _written(root: Path) -> Written:
    """Every entry an extractor left under ``root``: kind, bytes (regular files), mode."""
    out: Written = {}
    for path in sorted(root.rglob("*")):
        st = path.lstat()
        relative = path.relative_to(root).as_posix()
        if stat.S_ISDIR(st.st_mode):
            continue
        kind = "file" if stat.S_ISREG(st.st_mode) else "other"
        data = path.read_bytes() if kind == "file" else None
        out[relative] = (kind, data, stat.S_IMODE(st.st_mode))
    return out


def _gnu_tar(kit: Path, target: Path, *flags: str) -> Written:
    inside = target / "a" / "b"  # a member escaping upwards still lands in the sandbox
    inside.mkdir(parents=True)
    assert GNU_TAR is not None
    subprocess.run(
        [GNU_TAR, *flags, "-xzf", str(kit), "-C", str(inside), "--no-same-owner"],
        capture_output=True,
        check=False,
        timeout=60,
    )
    return _written(target)


def _tarfile(kit: Path, target: Path) -> Written:
    inside = target / "a" / "b"
    inside.mkdir(parents=True)
    try:
        with tarfile.open(kit) as tar:
            tar.extractall(inside, filter="data")
    except (tarfile.TarError, OSError, EOFError, gzip.BadGzipFile):
        pass  # whatever it wrote before stopping is still compared
    return _written(target)


def _verified(kit: Path) -> KitVerification | None:
    try:
        return verify_kit(kit, TRUST)
    except Error:
        return None


def _expected(result: KitVerification) -> Written:
    return {
        f"a/b/{path}": ("file", data, member_mode(path))
        for path, data in result.contents.files.items()
    }


def _check(kit: Path, tmp_path: Path) -> bool:
    """The property; returns whether the kit verified."""
    result = _verified(kit)
    if result is None:
        return False
    expected = _expected(result)
    for name, extract in [
        ("tar -xzf", lambda t: _gnu_tar(kit, t)),
        ("tar -ixzf", lambda t: _gnu_tar(kit, t, "--ignore-zeros")),
        ("tarfile", lambda t: _tarfile(kit, t)),
    ]:
        target = tmp_path / name.replace(" ", "_")
        assert extract(target) == expected, f"{name} unpacks {kit.name} differently"
        shutil.rmtree(target)
    return True


@pytest.mark.parametrize("kit", FIXTURES, ids=[p.name.removesuffix(".tar.gz") for p in FIXTURES])
def test_each_fixture_is_refused_or_unpacks_to_what_verified(kit: Path, tmp_path: Path) -> None:
    assert _check(kit, tmp_path) == (kit.name == "kit_valid.tar.gz")


def test_the_attacks_unpack_to_something_else(tmp_path: Path) -> None:
    """The fixtures are real attacks: GNU tar writes bytes that were never verified."""
    valid = _expected(verify_kit(ASSETS / "kit_valid.tar.gz", TRUST))
    for name in ("kit_header_bad_checksum", "kit_duplicate_member", "kit_pax_path_override"):
        written = _gnu_tar(ASSETS / f"{name}.tar.gz", tmp_path / name)
        assert written != valid, name
    for name in ("kit_gzip_appended_member", "kit_after_end_of_archive"):
        written = _gnu_tar(ASSETS / f"{name}.tar.gz", tmp_path / f"{name}-i", "-i")
        assert written != valid, name


def _mutants(count: int, seed: int = 10) -> list[tuple[str, bytes]]:
    """The valid kit with one header byte changed (and its checksum fixed, half the time)."""
    tar = gzip.decompress((ASSETS / "kit_valid.tar.gz").read_bytes())
    headers = [off for off in range(0, len(tar), 512) if tar[off + 257 : off + 262] == b"ustar"]
    rng, out = random.Random(seed), []
    for i in range(count):
        data = bytearray(tar)
        offset = rng.choice(headers) + rng.choice([*range(100, 148), *range(156, 500)])
        data[offset] = rng.choice(b"0123456789 \0x/Lg7")
        if i % 2:
            block = offset - offset % 512
            data[block + 148 : block + 156] = b" " * 8
            checksum = sum(data[block : block + 512])
            data[block + 148 : block + 156] = b"%06o\0 " % checksum
        out.append((f"mutant-{i}-at-{offset}", gzip.compress(bytes(data), mtime=0)))
    return out


def test_header_mutations_are_refused_or_unpack_identically(tmp_path: Path) -> None:
    os.umask(0o022)
    for name, data in _mutants(24):
        kit = tmp_path / f"{name}.tar.gz"
        kit.write_bytes(data)
        assert not _check(kit, tmp_path / name), f"{name} verified"  # every mutant differs
