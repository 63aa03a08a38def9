"""What evidence v2 adds, written by a real harness run against the simulator."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from servekit.bench.serveconf import from_command, from_file, serve_config
from servekit.errors import UsageError
from servekit.package.evidence import FORMAT_V2, V1_CANNOT_VERIFY, Evidence, load_evidence

Sim = Callable[..., AbstractContextManager[str]]
Harness = Callable[..., list[Evidence]]


def test_header_names_engine_model_workload_and_serve(sim: Sim, run_harness: Harness) -> None:
    serve = from_command("VLLM_X=1 servekit sim serve --port 0")
    with sim() as url:
        evs = run_harness(
            url, runs=2, concurrencies=(1, 2), warmup=2, hardware="1x H200", serve=serve
        )
    h = evs[0].header
    assert h.format == FORMAT_V2 and evs[0].version == 2 and evs[0].cannot_verify == ()
    assert h.engine_name == "servekit-sim" and h.served_models == ("servekit-sim",)
    assert h.hardware == "1x H200" and h.serve == serve
    assert h.workload is not None and h.workload.concurrencies == (1, 2)
    assert (h.workload.prompt_min, h.workload.prompt_max, h.workload.warmup) == (20, 40, 2)
    assert h.requests_sent == len(evs[0].requests) == 2 * (6 + 2)  # probes are not counted
    assert h.run_uid and h.run_uid != evs[1].header.run_uid


def test_records_carry_send_order_with_warmups_first(sim: Sim, run_harness: Harness) -> None:
    with sim() as url:
        (ev,) = run_harness(url, concurrencies=(1, 2), warmup=2)
    seqs = [r.seq for r in ev.requests]
    assert sorted(s for s in seqs if s is not None) == list(range(len(ev.requests)))
    for conc in (1, 2):
        last_warm = max(r.seq or 0 for r in ev.warmups(conc))
        assert all((r.seq or 0) > last_warm for r in ev.measured(conc))
    assert {r.content_parts for r in ev.requests} == {("text",)}


def test_failed_requests_are_recorded_and_counted(sim: Sim, run_harness: Harness) -> None:
    """Every second request fails; each failure is recorded, and the fault does not stick
    (the simulator used to fail every request after the first HTTP 500)."""
    with sim(fault="http_500", fault_every=2) as url:
        (ev,) = run_harness(url, requests=8, warmup=0)
    assert ev.header.requests_sent == len(ev.requests) == 8
    failed = [r for r in ev.requests if not r.ok]
    assert len(failed) == 4 and all(r.http_status == 500 for r in failed)


def test_v1_files_say_what_cannot_be_verified() -> None:
    ev_dir = Path(__file__).parents[2] / "examples/packages/llama-850m-h200/evidence"
    ev = load_evidence(ev_dir / "h200-run-1.jsonl")  # transformers serve has no /version
    assert ev.version == 1 and ev.cannot_verify[1:] == V1_CANNOT_VERIFY
    assert ev.cannot_verify[0].startswith("engine version as the server reported it")


def test_v2_files_list_the_v2_fields_they_lack(sim: Sim, run_harness: Harness) -> None:
    with sim() as url:
        (ev,) = run_harness(url)  # no --hardware, no --serve-command
    assert ev.cannot_verify == (
        "hardware label of the run (header hardware)",
        "serve configuration the engine ran with (header serve)",
    )


def test_serve_command_splits_env_from_argv() -> None:
    cfg = from_command("A=1 B='x y' vllm serve m --kv-cache-dtype fp8")
    assert cfg.env == {"A": "1", "B": "x y"}
    assert cfg.argv == ("vllm", "serve", "m", "--kv-cache-dtype", "fp8")
    with pytest.raises(UsageError):
        from_command("A=1")
    with pytest.raises(UsageError):
        serve_config("vllm serve m", Path("x.yaml"))


def test_serve_config_reads_argv_file_or_package_yaml(tmp_path: Path) -> None:
    plain = tmp_path / "serve.yaml"
    plain.write_text("argv: [vllm, serve, m]\nenv: {A: '1'}\n")
    assert from_file(plain).argv == ("vllm", "serve", "m") and from_file(plain).env == {"A": "1"}
    pkg = tmp_path / "package.yaml"
    pkg.write_text(
        "model: {repo: org/m}\nserve: {entrypoint: [vllm, serve], args: [--seed, '0'], "
        "env: [{name: A, value: '2'}]}\n"
    )
    assert from_file(pkg).argv == ("vllm", "serve", "org/m", "--seed", "0")
    converted = tmp_path / "converted" / "package.yaml"
    converted.parent.mkdir()
    converted.write_text(
        "model: {repo: org/m}\nserve: {entrypoint: [vllm, serve], model_dir: /models/m, "
        "args: [--seed, '0']}\n"
    )
    assert from_file(converted).argv == ("vllm", "serve", "/models/m", "--seed", "0")
    bad = tmp_path / "bad.yaml"
    bad.write_text("argv: vllm serve\n")
    with pytest.raises(UsageError):
        from_file(bad)
