"""Reproducible kits: the signing time comes from --signed-at, SOURCE_DATE_EPOCH or the
clock, and with the same inputs, key and time a rebuild is byte for byte the same."""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from servekit.errors import UsageError
from servekit.kit.build import build_kit, source_date_epoch
from tests.cli.helpers import run_cli
from tests.kit.helpers import EXAMPLES, KEYS, ROOT, private_key

SIGNED_AT = dt.datetime(2026, 12, 2, 18, tzinfo=dt.UTC)  # after every example's date
EPOCH = str(int(SIGNED_AT.timestamp()))

REBUILD = """
import sys
from servekit.cli.main import main
key, out, *packages = sys.argv[1:]
for package in packages:
    name = package.rsplit("/", 1)[-1]
    code = main(["kit", "build", package, "--key", key, "-o", f"{out}/{name}.tar.gz"])
    assert code == 0, (package, code)
"""


def test_every_example_kit_rebuilds_byte_for_byte_in_another_process_a_second_later(
    tmp_path: Path,
) -> None:
    key = private_key("publisher", tmp_path)
    built = time.monotonic()
    first = {p.name: build_kit(p, key, signed_at=SIGNED_AT).archive for p in EXAMPLES}
    time.sleep(max(0.0, built + 1.1 - time.monotonic()))  # the clock has moved on
    env = {**os.environ, "SOURCE_DATE_EPOCH": EPOCH, "PYTHONPATH": str(ROOT / "src")}
    args = [str(key), str(tmp_path), *map(str, EXAMPLES)]
    done = subprocess.run(
        [sys.executable, "-c", REBUILD, *args], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    for name, archive in first.items():
        assert (tmp_path / f"{name}.tar.gz").read_bytes() == archive, name


def test_signed_at_wins_over_source_date_epoch_and_both_over_the_clock(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = private_key("publisher", tmp_path)
    package = str(EXAMPLES[0])
    monkeypatch.setenv("SOURCE_DATE_EPOCH", EPOCH)
    code, out, err = run_cli(
        ["kit", "build", package, "--key", str(key), "-o", str(tmp_path / "a"), "--json"]
    )
    assert code == 0, err
    assert json.loads(out)["signed_at"] == "2026-12-02T18:00:00Z"
    later = ["--signed-at", "2026-12-03T00:00:00+00:00"]
    code, out, err = run_cli(
        ["kit", "build", package, "--key", str(key), "-o", str(tmp_path / "b"), "--json", *later]
    )
    assert code == 0 and json.loads(out)["signed_at"] == "2026-12-03T00:00:00Z", err
    monkeypatch.delenv("SOURCE_DATE_EPOCH")
    before = dt.datetime.now(dt.UTC).replace(microsecond=0)
    code, out, err = run_cli(
        ["kit", "build", package, "--key", str(key), "-o", str(tmp_path / "c"), "--json"]
    )
    stamped = dt.datetime.fromisoformat(json.loads(out)["signed_at"])
    assert code == 0 and before <= stamped <= dt.datetime.now(dt.UTC), err


def test_the_published_kit_says_when_it_was_signed(tmp_path: Path) -> None:
    key = private_key("publisher", tmp_path)
    kit = tmp_path / "kit.tar.gz"
    kit.write_bytes(build_kit(EXAMPLES[0], key, signed_at=SIGNED_AT).archive)
    trust = str(KEYS / "publisher.pub")
    code, out, err = run_cli(["verify", "kit", str(kit), "--trust", trust, "--json"])
    assert code == 0 and json.loads(out)["signed_at"] == "2026-12-02T18:00:00Z", err


@pytest.mark.parametrize("raw", ["abc", "-5", "1.5", " 12", "\uff11\uff12", "99999999999999999999"])
def test_a_malformed_source_date_epoch_is_refused_not_replaced_by_the_clock(raw: str) -> None:
    with pytest.raises(UsageError, match="SOURCE_DATE_EPOCH"):
        source_date_epoch({"SOURCE_DATE_EPOCH": raw})


def test_source_date_epoch_unset_or_empty_leaves_the_clock() -> None:
    assert source_date_epoch({}) is None and source_date_epoch({"SOURCE_DATE_EPOCH": ""}) is None
    assert source_date_epoch({"SOURCE_DATE_EPOCH": "0"}) == dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
