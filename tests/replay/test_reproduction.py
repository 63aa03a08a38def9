"""Signed reproductions: compare --sign, then `servekit verify reproduction` offline."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from servekit.errors import ReproductionError, SignatureError, UntrustedKeyError
from servekit.kit.build import build_kit, write_kit
from servekit.receipts.canonical import canonical_json
from servekit.receipts.dsse import b64decode, b64encode
from servekit.receipts.keys import load_signing_key, load_trust_store
from servekit.receipts.signing import sign_payload
from servekit.replay import compare, sign_reproduction, verify_reproduction
from servekit.replay.models import REPRODUCTION_PREDICATE_TYPE
from tests.assets.make_kit_fixtures import private_key
from tests.functional.helpers import servekit
from tests.replay.fixtures import TOLERANCE_PCT, Keys


@pytest.fixture
def signed(kit: Path, replay_copy: Path, keys: Keys) -> Path:
    path = replay_copy / "reproduction.dsse.json"
    path.write_bytes(
        sign_reproduction(
            compare(kit, replay_copy, tolerance_pct=TOLERANCE_PCT), load_signing_key(keys.buyer)
        )
    )
    return path


def _statement(path: Path) -> dict[str, object]:
    payload = b64decode(json.loads(path.read_bytes())["payload"])
    result: dict[str, object] = json.loads(payload)
    return result


def test_the_statement_binds_the_receipt_the_evidence_and_the_comparison(
    signed: Path, kit: Path, replay_copy: Path, keys: Keys
) -> None:
    statement = _statement(signed)
    assert statement["predicateType"] == REPRODUCTION_PREDICATE_TYPE
    names = [s["name"] for s in statement["subject"]]  # type: ignore[attr-defined]
    assert names == ["servekit-receipt:tiny-sim@0.1.0", "sim-short/run-1.jsonl"]
    result = verify_reproduction(
        signed, load_trust_store(keys.buyer_pub, bare_key=True), kit=kit, replay_dir=replay_copy
    )
    predicate, key_id = result.predicate, result.key_id
    assert predicate.reproduced and key_id == load_signing_key(keys.buyer).public.key_id
    assert result.recomputed and result.kit_tolerance_pct == 2.0  # signed at 12 %
    assert {f.id for f in predicate.figures} >= {"ttft-p50-c4", "rps-reported"}


def test_another_key_is_refused(signed: Path, keys: Keys) -> None:
    with pytest.raises(UntrustedKeyError):
        verify_reproduction(signed, load_trust_store(keys.publisher_pub, bare_key=True))


def test_a_changed_payload_is_refused(signed: Path, keys: Keys) -> None:
    envelope = json.loads(signed.read_bytes())
    statement = _statement(signed)
    statement["predicate"]["tolerance_pct"] = 50.0  # type: ignore[index]
    envelope["payload"] = b64encode(canonical_json(statement))
    signed.write_bytes(canonical_json(envelope))
    with pytest.raises(SignatureError):
        verify_reproduction(signed, load_trust_store(keys.buyer_pub, bare_key=True))


def test_edited_replay_evidence_is_named(signed: Path, replay_copy: Path, keys: Keys) -> None:
    evidence = replay_copy / "sim-short" / "run-1.jsonl"
    evidence.write_text(evidence.read_text() + "\n")
    with pytest.raises(ReproductionError, match="not the one the reproduction signed") as info:
        verify_reproduction(
            signed, load_trust_store(keys.buyer_pub, bare_key=True), replay_dir=replay_copy
        )
    assert info.value.file == str(evidence)


def test_another_kit_is_named(signed: Path, keys: Keys, package_dir: Path, tmp_path: Path) -> None:
    other = tmp_path / "other.tar.gz"
    write_kit(build_kit(package_dir, private_key("untrusted", tmp_path)), other)
    with pytest.raises(ReproductionError, match="of another kit"):
        verify_reproduction(signed, load_trust_store(keys.buyer_pub, bare_key=True), kit=other)


def test_a_receipt_is_not_a_reproduction(kit: Path, keys: Keys, tmp_path: Path) -> None:
    """Another in-toto statement signed by a trusted key is still not a reproduction."""
    other = tmp_path / "other.dsse.json"
    statement = {"_type": "https://in-toto.io/Statement/v1", "subject": [], "predicateType": "x"}
    other.write_bytes(sign_payload(canonical_json(statement), load_signing_key(keys.buyer)))
    with pytest.raises(ReproductionError, match="not a servekit reproduction"):
        verify_reproduction(other, load_trust_store(keys.buyer_pub, bare_key=True))


def test_acceptance_compare_sign_and_verify(
    kit: Path, replays: dict[str, Path], keys: Keys, tmp_path: Path
) -> None:
    """As a buyer: compare (all within), sign; a slower engine's regressions are named."""
    same, out = replays["same"], tmp_path / "same.dsse.json"
    done = servekit("bench", "compare", str(kit), str(same), "--sign", str(keys.buyer),
                    "--reproduction-out", str(out), "--tolerance", "12")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "reproduced" in done.stdout and "reported: here is your measurement" in done.stdout
    verified = servekit("verify", "reproduction", str(out), "--trust", str(keys.buyer_pub),
                        "--kit", str(kit), "--replay", str(same))  # fmt: skip
    assert verified.returncode == 0, verified.stderr
    assert "6 within" in verified.stdout

    slow = servekit("bench", "compare", str(kit), str(replays["slower"]), "--json",
                    "--tolerance", "12")  # fmt: skip
    assert slow.returncode == 55
    rows = json.loads(slow.stdout)["figures"]
    assert sorted(r["id"] for r in rows if r["verdict"] == "worse") == sorted(
        ["ttft-p50-c4", "tpot-p50-c4", "e2el-p99-c4", "output-tps-gpu-c4", "output-tps-node-c4",
         "ttft-p50-c1"]
    )  # fmt: skip
    assert "ttft-p50-c4 (worse)" in slow.stderr


# --- a signed reproduction is checked, not believed ----------------------------------------


def _resign(path: Path, keys: Keys, edit: Callable[[dict[str, Any]], None]) -> Path:
    """The reproduction with its statement edited and signed again by the buyer's own key."""
    statement = _statement(path)
    edit(statement)
    path.write_bytes(sign_payload(canonical_json(statement), load_signing_key(keys.buyer)))
    return path


def _row(statement: dict[str, Any], figure: str) -> dict[str, Any]:
    rows: list[dict[str, Any]] = statement["predicate"]["figures"]
    return next(r for r in rows if r["id"] == figure)


def _verify(signed: Path, keys: Keys, **where: Path) -> object:
    return verify_reproduction(signed, load_trust_store(keys.buyer_pub, bare_key=True), **where)


def test_a_verdict_its_numbers_do_not_give_is_refused(signed: Path, keys: Keys) -> None:
    """Measured twice as slow, signed as within: refused with the signature alone."""

    def slower(statement: dict[str, Any]) -> None:
        row = _row(statement, "ttft-p50-c4")
        row["buyer"] = row["published"] * 2

    _resign(signed, keys, slower)
    with pytest.raises(ReproductionError, match="ttft-p50-c4: the signed verdict does not follow"):
        _verify(signed, keys)


def test_reproduced_despite_a_worse_figure_is_refused(signed: Path, keys: Keys) -> None:
    def worse(statement: dict[str, Any]) -> None:
        row = _row(statement, "ttft-p50-c4")
        row.update(buyer=row["published"] * 2, diff_pct=100.0, verdict="worse")

    _resign(signed, keys, worse)
    with pytest.raises(ReproductionError, match="signed result does not follow"):
        _verify(signed, keys)


def test_numbers_the_evidence_does_not_give_are_refused(
    signed: Path, keys: Keys, kit: Path, replay_copy: Path
) -> None:
    """Consistent numbers (exactly the published value, within), but not the measured ones."""

    def flattering(statement: dict[str, Any]) -> None:
        row = _row(statement, "ttft-p50-c4")
        row.update(buyer=row["published"], diff_pct=0.0, verdict="within")

    _resign(signed, keys, flattering)
    _verify(signed, keys)  # its arithmetic holds: only the evidence can tell
    with pytest.raises(ReproductionError, match="not what the bound evidence gives") as info:
        _verify(signed, keys, kit=kit, replay_dir=replay_copy)
    assert "buyer" in str(info.value.actual)


def test_a_figure_marked_retracted_that_the_kit_does_not_retract_is_refused(
    signed: Path, keys: Keys, kit: Path
) -> None:
    def hide(statement: dict[str, Any]) -> None:
        _row(statement, "ttft-p50-c4").update(verdict="retracted", diff_pct=None)

    _resign(signed, keys, hide)
    with pytest.raises(ReproductionError, match="figure ttft-p50-c4 is not the kit's"):
        _verify(signed, keys, kit=kit)


@pytest.mark.parametrize(
    ("field", "value"),
    [("package", "other-kit"), ("version", "9.9.9"), ("kit_digest", "0" * 64)],
)
def test_a_reproduction_naming_another_kit_is_refused(
    signed: Path, keys: Keys, kit: Path, field: str, value: str
) -> None:
    def rename(statement: dict[str, Any]) -> None:
        ref = statement["predicate"]["kit"]
        ref[field] = value
        statement["subject"][0]["name"] = f"servekit-receipt:{ref['package']}@{ref['version']}"

    _resign(signed, keys, rename)
    _verify(signed, keys)  # self-consistent: only the kit can tell
    with pytest.raises(ReproductionError, match="of another kit") as info:
        _verify(signed, keys, kit=kit)
    assert value in str(info.value.expected)


def _point_evidence_at(signed: Path, keys: Keys, name: str) -> None:
    def move(statement: dict[str, Any]) -> None:
        statement["subject"][1]["name"] = name

    _resign(signed, keys, move)


@pytest.mark.parametrize("how", ["dot-dot", "absolute", "symlink"])
def test_evidence_outside_the_replay_directory_is_refused(
    signed: Path, keys: Keys, replay_copy: Path, tmp_path: Path, how: str
) -> None:
    """The same bytes, outside --replay: never read, whatever the digest says."""
    outside = tmp_path / "outside"
    outside.mkdir()
    shutil.copy(replay_copy / "sim-short" / "run-1.jsonl", outside / "run-1.jsonl")
    (replay_copy / "link").symlink_to(outside)
    name = {
        "dot-dot": "../outside/run-1.jsonl",
        "absolute": str(outside / "run-1.jsonl"),
        "symlink": "link/run-1.jsonl",
    }[how]
    _point_evidence_at(signed, keys, name)
    with pytest.raises(ReproductionError, match="outside the replay directory") as info:
        _verify(signed, keys, replay_dir=replay_copy)
    assert info.value.file == name


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda ws: ws[0].update(completed=ws[0]["completed"] + 1), "workload sim-short"),
        (lambda ws: ws.pop(), "workloads are not the kit's"),
    ],
    ids=["completed-count", "workload-dropped"],
)
def test_workloads_the_evidence_does_not_give_are_refused(
    signed: Path,
    keys: Keys,
    kit: Path,
    replay_copy: Path,
    edit: Callable[[list[dict[str, Any]]], None],
    message: str,
) -> None:
    _resign(signed, keys, lambda s: edit(s["predicate"]["workloads"]))
    with pytest.raises(ReproductionError, match=message):
        _verify(signed, keys, kit=kit, replay_dir=replay_copy)


def test_a_row_set_other_than_the_kits_is_refused(signed: Path, keys: Keys, kit: Path) -> None:
    _resign(signed, keys, lambda s: s["predicate"]["figures"].pop())
    with pytest.raises(ReproductionError, match="figures are not the kit's"):
        _verify(signed, keys, kit=kit)
