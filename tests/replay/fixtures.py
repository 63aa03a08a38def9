"""A kit of the tiny-sim package, and replays of it against real simulator processes
(session fixtures, registered once for the whole suite by tests/conftest.py).

The simulators run as `servekit sim serve` processes (their own cores, as a buyer's
engine would) with tiny-sim's profile (120 ms to first token, 15 ms a token) and one
20 % slower (144 ms, 18 ms). Each replay runs the whole recorded grid once per session
through the CLI, as a buyer would; the tests then read its directory.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from servekit.kit.build import build_kit, write_kit
from servekit.package.evidence import load_evidence
from servekit.package.models import Source
from tests.assets.make_kit_fixtures import private_key
from tests.functional.helpers import EXAMPLES, ROOT, SERVEKIT
from tests.kit.helpers import package_copy
from tests.once import built_once

PROFILES = {"same": ("120", "15"), "slower": ("144", "18")}
# Passed to compare (the package keeps its own 2 %): above a loaded 2-core machine's noise,
# below the slower profile's 16-20 %.
TOLERANCE_PCT = 12.0


@dataclass(frozen=True)
class Keys:
    publisher: Path
    publisher_pub: Path
    buyer: Path
    buyer_pub: Path


def _edit(data: dict[str, Any]) -> None:
    """tiny-sim plus what a comparison must tell apart: a second workload the replays
    skip, reported figures on each workload, and a retracted figure."""
    short = data["workloads"][0]
    data["workloads"].append({**short, "id": "sim-long", "description": "Not replayed."})
    measured_on = {**data["measurements"]["figures"][0]["measured_on"]}
    source: dict[str, Any] = {
        "name": "an earlier publisher",
        "reference": "a blog post",
        "date": "2026-11-30",
    }
    if "workload" in Source.model_fields:  # newer schemas record the workload a source ran
        source["workload"] = {"output_tokens": 32, "concurrency": 4, "requests": 12, "warmup": 2}
    reported = {
        "label": "Requests per second (reported)",
        "metric": "request_throughput",
        "statistic": "value",
        "scope": "node",
        "concurrency": 4,
        "value": 6.5,
        "decimals": 1,
        "provenance": "reported",
        "source": source,
    }
    long_on = {**measured_on, "workload": "sim-long"}
    data["measurements"]["figures"] += [
        {**reported, "id": "rps-reported", "measured_on": measured_on},
        {**reported, "id": "rps-long-reported", "measured_on": long_on},
        {
            **data["measurements"]["figures"][5],
            "id": "ttft-p50-c1-old",
            "label": "TTFT p50, withdrawn",
            "status": {"state": "retracted", "reason": "superseded", "date": "2026-11-30"},
        },
    ]


@pytest.fixture(scope="session")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Keys:
    base = tmp_path_factory.mktemp("keys")
    assets = ROOT / "tests" / "assets" / "keys"
    return Keys(
        private_key("publisher", base),
        assets / "publisher.pub",
        private_key("untrusted", base),
        assets / "untrusted.pub",
    )


@pytest.fixture(scope="session")
def package_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built_once(tmp_path_factory, "replay-package", _copy_package) / "pkg"


def _copy_package(directory: Path) -> None:
    package_copy(directory, _edit, EXAMPLES / "tiny-sim")


@pytest.fixture(scope="session")
def kit(package_dir: Path, keys: Keys, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One kit for the run: every worker's replays and comparisons are of the same bytes."""

    def build(directory: Path) -> None:
        write_kit(build_kit(package_dir, keys.publisher), directory / "tiny-sim.tar.gz")

    return built_once(tmp_path_factory, "replay-kit", build) / "tiny-sim.tar.gz"


def recorded_model() -> str:
    """The model name tiny-sim's publisher measured (what the replay asks for by default)."""
    return load_evidence(EXAMPLES / "tiny-sim" / "evidence" / "run-1.jsonl").header.model


def start_simulator(ttft_ms: str, itl_ms: str) -> tuple[subprocess.Popen[str], str]:
    args = ["sim", "serve", "--port", "0", "--ttft-ms", ttft_ms, "--itl-ms", itl_ms]
    args += ["--model", recorded_model()]
    proc = subprocess.Popen([*SERVEKIT, *args], stderr=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.stderr is not None
    line = proc.stderr.readline()
    match = re.search(r"http://127\.0\.0\.1:\d+", line)
    assert match, line
    return proc, match.group(0)


@pytest.fixture(scope="session")
def replays(kit: Path, keys: Keys, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``{"same": DIR, "slower": DIR}``: `servekit bench replay` of sim-short on each profile,
    once for the whole run (tests read them; :func:`replay_copy` gives one to edit)."""
    base = built_once(tmp_path_factory, "replays", lambda d: _replay_profiles(kit, keys, d))
    return {name: base / name for name in PROFILES}


def _replay_profiles(kit: Path, keys: Keys, base: Path) -> None:
    """Both profiles at once, each replay against its own simulator process: the replays
    mostly wait on the simulators' clocks, so running them together halves the wait."""
    simulators: list[subprocess.Popen[str]] = []
    replaying: dict[str, subprocess.Popen[str]] = {}
    try:  # every process started is stopped and reaped, whatever fails
        urls = {}
        for name, profile in PROFILES.items():
            simulator, urls[name] = start_simulator(*profile)
            simulators.append(simulator)
        replaying = {name: _replay(kit, keys, url, base / name) for name, url in urls.items()}
        errors = {name: proc.communicate(timeout=120)[1] for name, proc in replaying.items()}
    finally:
        for proc in replaying.values():
            if proc.poll() is None:
                proc.kill()
        for proc in simulators:
            proc.terminate()
        for proc in [*replaying.values(), *simulators]:
            proc.wait(10)
    for name, proc in replaying.items():
        assert proc.returncode == 0, errors[name]


def _replay(kit: Path, keys: Keys, url: str, out: Path) -> subprocess.Popen[str]:
    args = ["bench", "replay", str(kit), "--trust", str(keys.publisher_pub), "--endpoint", url,
            "--workload", "sim-short", "--out", str(out)]  # fmt: skip
    return subprocess.Popen(
        [*SERVEKIT, *args], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@pytest.fixture
def replay_copy(replays: dict[str, Path], tmp_path: Path) -> Iterator[Path]:
    """A copy of the "same" replay that a test may edit."""
    target = tmp_path / "replay"
    shutil.copytree(replays["same"], target)
    yield target
