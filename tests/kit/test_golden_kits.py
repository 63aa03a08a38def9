"""The example kits keep their bytes through refactors: each is rebuilt and compared with its recorded digest.

The digests in tests/assets/example_kit_digests.json were taken from kits built before the
moves of issue 24 (verify in memory, the store's payments, the web room, the seams). A change
that alters a kit on purpose (a rule message, a README line) re-records them with
``python -m tests.kit.test_golden_kits --update`` and says why in its commit; a refactor never does.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import sys
import tempfile
from pathlib import Path

import pytest

from servekit.kit.build import build_kit
from servekit.package import load_package
from tests.kit.helpers import EXAMPLES, PACKAGE_DIR, ROOT, private_key

DIGESTS = ROOT / "tests" / "assets" / "example_kit_digests.json"
SIGNED_AT = dt.datetime(2026, 12, 1, 18, tzinfo=dt.UTC)  # kept where the kits were recorded
PACKAGES = {p.name: p for p in [PACKAGE_DIR, *EXAMPLES]}


def kit_digest(package_dir: Path, workdir: Path, signed_at: dt.datetime) -> str:
    """The sha256 of the kit built from ``package_dir`` with the test publisher key."""
    archive = build_kit(package_dir, private_key("publisher", workdir), signed_at=signed_at).archive
    return hashlib.sha256(archive).hexdigest()


def signing_time(package_dir: Path) -> dt.datetime:
    """SIGNED_AT, or 18:00 UTC on the package's publication day when that is later (a kit
    is never signed before the date it claims)."""
    published = load_package(package_dir).package.published
    if published is None:
        return SIGNED_AT
    return max(SIGNED_AT, dt.datetime.combine(published, dt.time(18), tzinfo=dt.UTC))


def recorded() -> dict[str, dict[str, str]]:
    """Per example: the signing time its kit was recorded at and the kit's sha256."""
    return dict(json.loads(DIGESTS.read_text()))


def test_every_example_has_a_recorded_digest() -> None:
    assert sorted(recorded()) == sorted(PACKAGES)


@pytest.mark.parametrize("name", sorted(PACKAGES))
def test_the_kit_is_byte_identical_to_the_recorded_one(name: str, tmp_path: Path) -> None:
    entry = recorded()[name]
    signed_at = dt.datetime.fromisoformat(entry["signed_at"])
    assert kit_digest(PACKAGES[name], tmp_path, signed_at) == entry["sha256"], (
        f"the kit of {name} changed bytes; if on purpose, re-record with "
        "`python -m tests.kit.test_golden_kits --update` and say why in the commit"
    )


if __name__ == "__main__":  # pragma: no cover - maintenance entry point
    if sys.argv[1:] != ["--update"]:
        sys.exit("usage: python -m tests.kit.test_golden_kits --update")
    with tempfile.TemporaryDirectory() as work:
        table = {
            name: {
                "signed_at": signing_time(path).isoformat(),
                "sha256": kit_digest(path, Path(work), signing_time(path)),
            }
            for name, path in sorted(PACKAGES.items())
        }
    DIGESTS.write_text(json.dumps(table, indent=2) + "\n")
    print(f"recorded {len(table)} kit digests in {DIGESTS.relative_to(ROOT)}")
