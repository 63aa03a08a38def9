"""`servekit bench replay`: verifies the kit first, then runs its grid exactly as recorded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from servekit.errors import ReplayError, UntrustedKeyError
from servekit.package.evidence import load_evidence
from servekit.package.load import load_package
from servekit.receipts.canonical import sha256_hex
from servekit.receipts.keys import load_trust_store
from servekit.replay import ReplayOptions, prepare_replay
from servekit.replay.models import ReplayHeader
from servekit.verify.archive import read_kit
from tests.functional.helpers import servekit
from tests.replay.fixtures import Keys, recorded_model


def test_header_names_the_kit_receipt_host_and_engine(replays: dict[str, Path], kit: Path) -> None:
    header = ReplayHeader.model_validate_json((replays["same"] / "replay.json").read_bytes())
    receipt = read_kit(kit).get("receipt.dsse.json")
    assert receipt is not None
    assert header.kit.receipt_sha256 == sha256_hex(receipt)
    assert (header.kit.package, header.kit.version) == ("tiny-sim", "0.1.0")
    assert header.host.engine_version == "servekit-sim 0.1.0"
    assert header.host.engine_version_source == "/version"
    assert header.host.cpu_count is not None and header.host.cpu_count >= 1
    assert header.skipped == ("sim-long",)
    (workload,) = header.workloads
    (entry,) = workload.files
    assert entry.file == "sim-short/run-1.jsonl"
    assert sha256_hex((replays["same"] / entry.file).read_bytes()) == entry.sha256


def test_evidence_is_the_recorded_grid(replays: dict[str, Path], package_dir: Path) -> None:
    workload = load_package(package_dir).package.workloads[0]
    ev = load_evidence(replays["same"] / "sim-short" / "run-1.jsonl")
    recorded = load_evidence(package_dir / "evidence" / "run-1.jsonl")
    assert ev.header.seed == workload.seed and ev.header.model == recorded.header.model
    assert ev.header.simulator is True and ev.concurrencies == workload.concurrencies
    for c in workload.concurrencies:
        assert len(ev.measured(c)) == workload.measured_requests
        assert len(ev.warmups(c)) == workload.warmup_requests
    # the same seed gives the same prompt lengths as the publisher's run, request by request
    lengths = {r.id.split("-", 1)[1]: r.requested_prompt_tokens for r in ev.requests}
    assert lengths == {r.id.split("-", 1)[1]: r.requested_prompt_tokens for r in recorded.requests}
    assert all(r.requested_output_tokens == workload.output_tokens for r in ev.requests)
    assert all(r.ok for r in ev.requests)


def test_an_untrusted_kit_is_refused_before_any_request(
    kit: Path, keys: Keys, tmp_path: Path
) -> None:
    options = ReplayOptions(
        kit=kit,
        trust=load_trust_store(keys.buyer_pub, bare_key=True),
        endpoint="http://127.0.0.1:9",  # nothing listens: a request would fail differently
        out=tmp_path / "out",
    )
    with pytest.raises(UntrustedKeyError):
        prepare_replay(options)
    assert not (tmp_path / "out").exists()


def test_an_unknown_workload_is_refused(kit: Path, keys: Keys, tmp_path: Path) -> None:
    options = ReplayOptions(
        kit=kit,
        trust=load_trust_store(keys.publisher_pub, bare_key=True),
        endpoint="http://127.0.0.1:9",
        out=tmp_path / "out",
        workloads=("sim-huge",),
    )
    with pytest.raises(ReplayError, match="no workload sim-huge"):
        prepare_replay(options)


def test_plan_replays_every_workload_as_recorded(kit: Path, keys: Keys, tmp_path: Path) -> None:
    options = ReplayOptions(
        kit=kit,
        trust=load_trust_store(keys.publisher_pub, bare_key=True),
        endpoint="http://x",
        out=tmp_path,
    )
    plan = prepare_replay(options)
    assert [w.id for w, _ in plan.configs] == ["sim-short", "sim-long"] and not plan.skipped
    config = plan.configs[0][1]
    assert (config.prompt_min, config.prompt_max, config.output_tokens) == (200, 400, 32)
    assert (config.concurrencies, config.requests, config.warmup) == ((1, 4), 12, 2)
    assert (config.seed, config.request_rate) == (20261130, None)
    assert config.model == recorded_model()  # the name the publisher's run recorded
    assert config.out == tmp_path / "sim-short"
    assert plan.total_requests == 2 * 2 * (12 + 2)


def test_replay_refuses_to_overwrite(replay_copy: Path, kit: Path, keys: Keys) -> None:
    done = servekit(
        "bench", "replay", str(kit), "--trust", str(keys.publisher_pub),
        "--endpoint", "http://127.0.0.1:9", "--workload", "sim-short", "--out", str(replay_copy),
    )  # fmt: skip
    assert done.returncode == 56, done.stderr
    assert "already exists" in done.stderr
    assert json.loads((replay_copy / "replay.json").read_text())["record"] == "replay"
