"""The acceptance test: `feed sign`, then `verify kit --feed` / `verify weights --feed`."""

from __future__ import annotations

from pathlib import Path

import yaml

from servekit.verify.archive import read_kit
from tests.assets.make_kit_fixtures import private_key
from tests.feed.test_feed import KIT, MODEL, PUB
from tests.functional.helpers import servekit
from tests.kit.helpers import PACKAGE_DIR as PACKAGE


def _source(path: Path, **lists: list[dict[str, str]]) -> Path:
    path.write_text(yaml.safe_dump({"publisher": "servekit tests", **lists}))
    return path


def _sign(source: Path, key: Path, out: Path, state: Path) -> None:
    done = servekit("feed", "sign", str(source), "--key", str(key), "-o", str(out),
                    "--expires-in", "1d", "--state", str(state))  # fmt: skip
    assert done.returncode == 0, done.stderr


def _verify_kit(feed: Path, state: Path) -> tuple[int, str]:
    done = servekit("verify", "kit", str(KIT), "--trust", str(PUB), "--feed", str(feed),
                    "--feed-state", str(state))  # fmt: skip
    return done.returncode, done.stdout + done.stderr


def test_revocation_and_rollback(tmp_path: Path) -> None:
    key, publisher_state = private_key("publisher", tmp_path), tmp_path / "publisher.json"
    buyer_state = tmp_path / "buyer.json"
    retracted = {"package": "kit-fixture", "version": "1.0.0", "figure": "ttft-p50-c1",
                 "reason": "re-measured", "date": "2026-11-30"}  # fmt: skip
    first = tmp_path / "feed-1.json"
    _sign(_source(tmp_path / "a.yaml", retracted_figures=[retracted]), key, first, publisher_state)
    code, text = _verify_kit(first, buyer_state)
    assert code == 0, text
    assert "warning: figure 'ttft-p50-c1' was retracted" in text and "re-measured" in text

    revoked = {"package": "kit-fixture", "version": "1.0.0", "reason": "serve flags lose requests",
               "date": "2026-12-01", "link": "https://example.invalid/advisory"}  # fmt: skip
    second = tmp_path / "feed-2.json"
    _sign(_source(tmp_path / "b.yaml", revoked_packages=[revoked]), key, second, publisher_state)
    code, text = _verify_kit(second, buyer_state)
    assert code == 54 and "serve flags lose requests" in text and "serial 2" in text

    code, text = _verify_kit(first, buyer_state)  # the older feed, after the newer was seen
    assert code == 53 and "rolled back" in text


def test_verify_weights_refuses_a_bad_model_commit(tmp_path: Path) -> None:
    key = private_key("publisher", tmp_path)
    bad = {
        "repo": MODEL[0],
        "commit": MODEL[1],
        "reason": "replaced upstream",
        "date": "2026-11-30",
    }
    feed = tmp_path / "feed.json"
    _sign(_source(tmp_path / "f.yaml", bad_models=[bad]), key, feed, tmp_path / "p.json")
    done = servekit("verify", "weights", str(tmp_path / "model"), "--kit", str(KIT), "--feed",
                    str(feed), "--trust", str(PUB), "--feed-state", str(tmp_path / "b.json"))  # fmt: skip
    assert done.returncode == 54 and "replaced upstream" in done.stderr
    no_trust = servekit("verify", "weights", str(tmp_path), "--package", str(PACKAGE), "--feed",
                        str(feed))  # fmt: skip
    assert no_trust.returncode == 2 and "--feed needs --trust" in no_trust.stderr


def test_a_feed_signed_by_another_key(tmp_path: Path) -> None:
    feed = tmp_path / "feed.json"
    _sign(
        _source(tmp_path / "f.yaml"), private_key("untrusted", tmp_path), feed, tmp_path / "p.json"
    )
    code, text = _verify_kit(feed, tmp_path / "b.json")
    assert code == 51 and "feed's signature" in text


def test_verify_weights_needs_the_feeds_publisher(tmp_path: Path) -> None:
    """Another trusted publisher's feed is refused; a bare pin must name its publisher."""
    trust = str(PUB.parent / "trust.toml")
    other = tmp_path / "other.json"
    source = tmp_path / "o.yaml"
    source.write_text(yaml.safe_dump({"publisher": "Someone Else"}))
    _sign(source, private_key("untrusted", tmp_path), other, tmp_path / "p.json")
    state = str(tmp_path / "b.json")
    done = servekit("verify", "weights", str(tmp_path), "--kit", str(KIT), "--trust", trust,
                    "--feed", str(other), "--feed-state", state)  # fmt: skip
    assert done.returncode == 51 and "another publisher's" in done.stderr, done.stderr
    pin = tmp_path / "pin.json"
    pin.write_bytes(read_kit(KIT).files["model/pin.json"])
    args = ["verify", "weights", str(tmp_path), "--pin", str(pin), "--trust", trust,
            "--feed", str(other), "--feed-state", state]  # fmt: skip
    bare = servekit(*args)
    assert bare.returncode == 2 and "names no publisher" in bare.stderr, bare.stderr
    named = servekit(*args, "--publisher", "servekit tests")
    assert named.returncode == 51 and "another publisher's" in named.stderr, named.stderr
