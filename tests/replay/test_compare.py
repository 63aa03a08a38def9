"""`servekit bench compare`: every figure, recomputed from the replay by the claim rules' code."""

from __future__ import annotations

import hashlib
import json
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest

from servekit.errors import ReplayError
from servekit.kit.build import build_kit, write_kit
from servekit.package.load import load_package
from servekit.package.models import Figure, Metric, Provenance, Scope, Statistic
from servekit.package.rules import check
from servekit.replay import Verdict, compare
from servekit.replay.compare import nothing_to_compare, verdict
from tests.assets.make_kit_fixtures import private_key
from tests.cli.helpers import run_cli
from tests.functional.helpers import servekit
from tests.replay.fixtures import TOLERANCE_PCT

MEASURED = {
    "ttft-p50-c4",
    "tpot-p50-c4",
    "e2el-p99-c4",
    "output-tps-gpu-c4",
    "output-tps-node-c4",
    "ttft-p50-c1",
}


def test_the_same_profile_reproduces_within_tolerance(kit: Path, replays: dict[str, Path]) -> None:
    result = compare(kit, replays["same"], tolerance_pct=TOLERANCE_PCT)
    verdicts = {f.id: f.verdict for f in result.figures}
    assert {k for k, v in verdicts.items() if v is Verdict.WITHIN} == MEASURED
    assert verdicts["rps-reported"] is Verdict.REPORTED
    assert verdicts["rps-long-reported"] is Verdict.NOT_REPLAYED
    assert verdicts["ttft-p50-c1-old"] is Verdict.RETRACTED
    assert result.tolerance_pct == TOLERANCE_PCT and result.reproduced
    assert [(w.id, w.replayed, w.failed) for w in result.workloads] == [
        ("sim-short", True, 0),
        ("sim-long", False, 0),
    ]


def test_a_20_percent_slower_engine_is_worse_on_exactly_the_measured_figures(
    kit: Path, replays: dict[str, Path]
) -> None:
    result = compare(kit, replays["slower"], tolerance_pct=TOLERANCE_PCT)
    by_id = {f.id: f for f in result.figures}
    assert {k for k, f in by_id.items() if f.verdict is Verdict.WORSE} == MEASURED
    for fid in MEASURED:
        f = by_id[fid]
        assert f.diff_pct is not None
        # 1/1.2 - 1 = -16.7 % and 1.2 - 1 = +20 %, less a little of the publisher's own
        # overhead; a loaded machine only makes the replay slower
        if f.metric.is_throughput:
            assert -50.0 < f.diff_pct < -15.0
        else:
            assert 18.0 < f.diff_pct < 50.0
    assert by_id["rps-reported"].verdict is Verdict.REPORTED
    assert not result.reproduced


def test_the_packages_own_tolerance_by_default(kit: Path, replays: dict[str, Path]) -> None:
    assert compare(kit, replays["slower"]).tolerance_pct == 2.0  # tiny-sim's tolerance_pct


def test_a_reported_figure_shows_the_buyers_measurement(
    kit: Path, replays: dict[str, Path]
) -> None:
    row = next(
        f
        for f in compare(kit, replays["same"], tolerance_pct=TOLERANCE_PCT).figures
        if f.id == "rps-reported"
    )
    assert row.provenance is Provenance.REPORTED and row.diff_pct is None
    assert row.buyer is not None and 4.0 < row.buyer < 8.0  # 4 streams of ~0.6 s requests


def test_buyer_values_are_what_the_claim_rules_recompute(
    kit: Path, replays: dict[str, Path], package_dir: Path, tmp_path: Path
) -> None:
    """Put the replay's evidence in the package as its run-1: package check must recompute
    the same numbers compare gave the buyer."""
    target = tmp_path / "pkg"
    shutil.copytree(package_dir, target)
    shutil.copy(
        replays["slower"] / "sim-short" / "run-1.jsonl", target / "evidence" / "run-1.jsonl"
    )
    report = check(load_package(target))
    recomputed = {f.id: f.recomputed for f in report.figures}
    for row in compare(kit, replays["slower"], tolerance_pct=TOLERANCE_PCT).figures:
        if row.id in MEASURED:
            assert row.buyer == recomputed[row.id]


def test_a_missing_workload_is_reported_not_compared(kit: Path, replay_copy: Path) -> None:
    header = json.loads((replay_copy / "replay.json").read_text())
    header["skipped"], header["workloads"] = ["sim-short", "sim-long"], []
    (replay_copy / "replay.json").write_text(json.dumps(header))
    result = compare(kit, replay_copy, tolerance_pct=TOLERANCE_PCT)
    assert {f.verdict for f in result.figures} == {Verdict.NOT_REPLAYED, Verdict.RETRACTED}
    assert not any(w.replayed for w in result.workloads) and not result.reproduced
    done = servekit("bench", "compare", str(kit), str(replay_copy))
    assert done.returncode == 55 and "no figure was replayed" in done.stderr
    assert "not replayed" in done.stdout


def test_edited_evidence_is_refused(kit: Path, replay_copy: Path) -> None:
    path = replay_copy / "sim-short" / "run-1.jsonl"
    path.write_text(path.read_text().replace('"t_end":', '"t_end": ', 1))
    with pytest.raises(ReplayError, match="not the file the replay wrote"):
        compare(kit, replay_copy)


def test_a_replay_of_another_kit_is_refused(
    package_dir: Path, replay_copy: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other.tar.gz"
    write_kit(build_kit(package_dir, private_key("untrusted", tmp_path)), other)
    with pytest.raises(ReplayError, match="replays another kit"):
        compare(other, replay_copy)


def test_a_directory_without_replay_json_is_refused(kit: Path, tmp_path: Path) -> None:
    with pytest.raises(ReplayError, match=r"replay\.json not found"):
        compare(kit, tmp_path)


@pytest.mark.parametrize(
    ("metric", "buyer", "expected"),
    [
        (Metric.TTFT, 105.0, Verdict.WITHIN),
        (Metric.TTFT, 110.0, Verdict.WITHIN),  # the boundary is within
        (Metric.TTFT, 111.0, Verdict.WORSE),
        (Metric.TTFT, 80.0, Verdict.BETTER),
        (Metric.OUTPUT_THROUGHPUT, 80.0, Verdict.WORSE),
        (Metric.OUTPUT_THROUGHPUT, 120.0, Verdict.BETTER),
    ],
)
def test_verdict_direction(metric: Metric, buyer: float, expected: Verdict) -> None:
    throughput = metric.is_throughput
    fig = Figure(
        id="f",
        label="f",
        metric=metric,
        statistic=Statistic.VALUE if throughput else Statistic.P50,
        scope=Scope.NODE if throughput else None,
        concurrency=1,
        value=100.0,
        provenance=Provenance.MEASURED,
    )
    diff, got = verdict(fig, buyer, 10.0)
    assert got is expected and diff == pytest.approx(buyer - 100.0)


@pytest.mark.parametrize(("buyer", "expected"), [(0.0, Verdict.WITHIN), (0.5, Verdict.WORSE)])
def test_a_published_zero_has_no_percentage_and_only_zero_reproduces_it(
    buyer: float, expected: Verdict
) -> None:
    """A figure published as 0: no difference in percent of 0 exists."""
    fig = Figure(
        id="f",
        label="f",
        metric=Metric.REQUEST_THROUGHPUT,
        statistic=Statistic.VALUE,
        scope=Scope.NODE,
        concurrency=1,
        value=0.0,
        provenance=Provenance.MEASURED,
    )
    assert verdict(fig, buyer, 10.0) == (None, expected)


# --- the command's own output, in-process --------------------------------------------


def test_the_command_prints_the_table_and_says_reproduced(
    kit: Path, replays: dict[str, Path]
) -> None:
    code, out, err = run_cli(
        ["bench", "compare", str(kit), str(replays["same"]), "--tolerance", str(TOLERANCE_PCT)]
    )
    assert code == 0, err
    assert "published vs your replay" in out and "reported: here is your measurement" in out
    assert "workload sim-long: not replayed" in out
    assert "✓ reproduced: every replayed figure is within tolerance or better" in out


def test_the_command_names_each_figure_not_reproduced(kit: Path, replays: dict[str, Path]) -> None:
    code, out, err = run_cli(
        ["bench", "compare", str(kit), str(replays["slower"]), "--tolerance", str(TOLERANCE_PCT)]
    )
    assert code == 55
    assert f"{len(MEASURED)} figure(s) not reproduced: " in err
    assert all(f"{fid} (worse)" in err for fid in MEASURED)
    assert "docs/replay.md" in err and "✓ reproduced" not in out


def _all_reported(data: dict[str, Any]) -> None:
    """Every figure as its source reported it: nothing the replay can be held against."""
    source = next(f["source"] for f in data["measurements"]["figures"] if "source" in f)
    data["measurements"].pop("runs")
    for figure in data["measurements"]["figures"]:
        if figure["provenance"] == "measured":
            figure.pop("runs", None)
            stated = {
                **source.get("workload", {}),
                "concurrency": figure["concurrency"],
                "modalities": ["text"],
            }
            figure.update(provenance="reported", source={**source, "workload": stated})


@pytest.fixture
def reported_kit(package_dir: Path, replay_copy: Path, tmp_path: Path) -> Path:
    """A kit of the same package with every figure reported, and ``replay_copy`` made a
    replay of it (its header names this kit's receipt)."""
    from tests.kit.helpers import package_copy

    package = package_copy(tmp_path / "reported", _all_reported, package_dir)
    out = tmp_path / "reported.tar.gz"
    write_kit(build_kit(package, private_key("publisher", tmp_path)), out)
    with tarfile.open(out) as tar:
        receipt = tar.extractfile("receipt.dsse.json")
        assert receipt is not None
        digest = hashlib.sha256(receipt.read()).hexdigest()
    header = json.loads((replay_copy / "replay.json").read_text())
    header["kit"]["receipt_sha256"] = digest
    (replay_copy / "replay.json").write_text(json.dumps(header))
    return out


def test_a_kit_of_reported_figures_has_nothing_to_compare_and_exits_0(
    reported_kit: Path, replay_copy: Path
) -> None:
    result = compare(reported_kit, replay_copy)
    assert not result.compared and nothing_to_compare(result)
    code, out, err = run_cli(["bench", "compare", str(reported_kit), str(replay_copy)])
    assert (code, err) == (0, ""), err
    assert out.count("nothing to compare: every figure is reported; here is your measurement") == 1
    yours = next(f for f in result.figures if f.id == "ttft-p50-c4").buyer
    assert yours is not None and f"{yours:.2f}" in out  # the buyer's own measurement is shown
    code, out, _ = run_cli(["bench", "compare", str(reported_kit), str(replay_copy), "--json"])
    assert code == 0 and json.loads(out)["nothing_to_compare"] is True


def test_a_failed_request_still_fails_a_kit_of_reported_figures(
    reported_kit: Path, replay_copy: Path
) -> None:
    result = compare(reported_kit, replay_copy)
    failed = result.model_copy(
        update={"workloads": tuple(w.model_copy(update={"failed": 1}) for w in result.workloads)}
    )
    assert nothing_to_compare(result) and not nothing_to_compare(failed)
