"""An interrupted benchmark keeps what it measured, says so, and exits 61."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.functional.helpers import ROOT, SERVEKIT, ctrl_c_reaches
from tests.replay.fixtures import recorded_model, start_simulator


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_an_interrupted_run_keeps_its_completed_requests(tmp_path: Path, signum: int) -> None:
    sim, url = start_simulator("5", "20")
    out = tmp_path / "run"
    try:
        args = ["bench", "run", "--endpoint", url, "--model", recorded_model(),
                "--input-tokens", "8:8", "--output-tokens", "10", "--requests", "2000",
                "--concurrency", "2", "--out", str(out)]  # fmt: skip
        bench = subprocess.Popen(
            [*SERVEKIT, "-q", *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, preexec_fn=ctrl_c_reaches,
        )  # fmt: skip
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not out.exists():
            time.sleep(0.1)
        time.sleep(2.0)  # some requests complete (each takes about 0.2 s)
        bench.send_signal(signum)
        _, err = bench.communicate(timeout=30)
    finally:
        sim.terminate()
        sim.wait(10)
    assert bench.returncode == 61, err
    assert "interrupted; kept" in err and "run-1.jsonl" in err
    lines = (out / "run-1.jsonl").read_text().splitlines()
    header = json.loads(lines[0])
    assert any(note.startswith("PARTIAL") for note in header["notes"]), header["notes"]
    assert 1 <= len(lines) - 1 < 2000


def _run(url: str, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    args = ["bench", "run", "--endpoint", url, "--model", recorded_model(),
            "--input-tokens", "8:8", "--output-tokens", "2", "--requests", "4",
            "--out", str(out), "--json", *extra]  # fmt: skip
    return subprocess.run([*SERVEKIT, "-q", *args], cwd=ROOT, capture_output=True, text=True)


def _faulty_run(out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """A run against a fresh simulator that answers every second request with HTTP 500."""
    args = ["sim", "serve", "--port", "0", "--model", recorded_model(), "--ttft-ms", "1",
            "--itl-ms", "1", "--fault", "http_500", "--fault-every", "2"]  # fmt: skip
    sim = subprocess.Popen([*SERVEKIT, *args], stderr=subprocess.PIPE, text=True, cwd=ROOT)
    assert sim.stderr is not None
    url = sim.stderr.readline().split("listening on ")[1].split()[0]
    try:
        return _run(url, out, *extra)
    finally:
        sim.terminate()
        sim.wait(10)


def test_failed_requests_above_max_error_rate_exit_60(tmp_path: Path) -> None:
    strict = _faulty_run(tmp_path / "strict")
    assert strict.returncode == 60, strict.stderr
    report = json.loads(strict.stdout)
    assert report["error"] == "ErrorRateError" and report["groups"][0]["failed"] >= 1
    assert (tmp_path / "strict" / "run-1.jsonl").is_file()  # the evidence is kept
    lenient = _faulty_run(tmp_path / "lenient", "--max-error-rate", "0.75")
    assert lenient.returncode == 0, lenient.stderr


def test_a_concurrency_no_request_can_reach_is_refused(tmp_path: Path) -> None:
    done = _run("http://127.0.0.1:9", tmp_path / "c", "--concurrency", "1,8")
    assert done.returncode == 2
    assert "at most 4 requests can ever be in flight" in done.stderr
    assert not (tmp_path / "c").exists()


def test_resume_keeps_whole_runs_and_measures_the_partial_one(tmp_path: Path) -> None:
    sim, url = start_simulator("1", "1")
    out = tmp_path / "run"
    try:
        assert _run(url, out, "--runs", "2").returncode == 0
        run1 = (out / "run-1.jsonl").read_bytes()
        lines = (out / "run-2.jsonl").read_text().splitlines()
        header = json.loads(lines[0])
        header["notes"].append("PARTIAL: interrupted after 1 of 4 measured requests")
        (out / "run-2.jsonl").write_text("\n".join([json.dumps(header), lines[1]]) + "\n")
        refused = _run(url, out, "--runs", "2")
        resumed = _run(url, out, "--runs", "2", "--resume")
    finally:
        sim.terminate()
        sim.wait(10)
    assert refused.returncode == 7 and "--force" in refused.stderr
    assert resumed.returncode == 0, resumed.stderr
    assert (out / "run-1.jsonl").read_bytes() == run1
    again = (out / "run-2.jsonl").read_text().splitlines()
    assert len(again) == 5 and not any(
        n.startswith("PARTIAL") for n in json.loads(again[0])["notes"]
    )
    assert {g["run"] for g in json.loads(resumed.stdout)} == {"run-1", "run-2"}


def _journal_lines(journal: Path, at_least: int, timeout_s: float = 30) -> int:
    """Wait until the journal holds ``at_least`` records; returns how many it holds."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if journal.is_file():
            records = len(journal.read_text().splitlines()) - 1
            if records >= at_least:
                return records
        time.sleep(0.05)
    raise AssertionError(f"{journal} never held {at_least} records")


def test_sigkill_loses_no_completed_request_and_resume_recovers_it(tmp_path: Path) -> None:
    sim, url = start_simulator("5", "20")  # each request about 0.2 s
    out = tmp_path / "run"
    args = ["bench", "run", "--endpoint", url, "--model", recorded_model(),
            "--input-tokens", "8:8", "--output-tokens", "10", "--requests", "12",
            "--concurrency", "2", "--out", str(out), "--json"]  # fmt: skip
    journal = out / "run-1.jsonl.partial"
    try:
        bench = subprocess.Popen([*SERVEKIT, "-q", *args], cwd=ROOT, stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)  # fmt: skip
        _journal_lines(journal, 3)
        bench.send_signal(signal.SIGKILL)
        bench.wait(10)
        killed = journal.read_text().splitlines()
        manifest = json.loads((out / "manifest.json").read_text())
        summary = subprocess.run([*SERVEKIT, "bench", "summary", str(out)], cwd=ROOT,
                                 capture_output=True, text=True)  # fmt: skip
        resumed = subprocess.run([*SERVEKIT, "-q", *args, "--resume"], cwd=ROOT,
                                 capture_output=True, text=True)  # fmt: skip
    finally:
        sim.terminate()
        sim.wait(10)
    kept = len(killed) - 1
    assert 3 <= kept < 12 and manifest["status"] == "running"  # killed mid-run
    assert summary.returncode == 7 and "did not finish" in summary.stderr  # no file to summarize
    assert resumed.returncode == 0, resumed.stderr
    assert f"recovered run-1.jsonl.partial: kept {kept} completed requests" in resumed.stderr
    assert "kept as run-1.interrupted.jsonl" in resumed.stderr
    aside = (out / "run-1.interrupted.jsonl").read_text().splitlines()
    assert aside[1:] == killed[1:]  # every record the killed process completed, unchanged
    assert any("ended abruptly" in n for n in json.loads(aside[0])["notes"])
    assert not journal.exists() and len((out / "run-1.jsonl").read_text().splitlines()) == 13
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["status"] == "complete"
    assert [f["file"] for f in manifest["files"]] == ["run-1.jsonl"]
    assert manifest["set_aside"] == ["run-1.interrupted.jsonl"]
    (row,) = json.loads(resumed.stdout)
    assert row["file"].endswith("run-1.jsonl") and row["completed"] == 12
