"""Every fault case against a real faulty server: recorded per request, never fatal,
never in the latency figures, counted and flagged by the summary."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from servekit.bench.sim import Fault
from servekit.bench.summary import summarize_path
from servekit.package.evidence import Evidence

FAULTY = "r1-c2-m0002"  # the third measured request of the run


@pytest.mark.parametrize(
    ("fault", "status", "message"),
    [
        (Fault.HTTP_500, 500, "HTTP 500"),
        (Fault.MIDSTREAM_ERROR, 200, "server error mid-stream: simulated engine failure"),
        (Fault.MALFORMED, 200, "malformed event line"),
        (Fault.DISCONNECT, 200, "connection failed (RemoteProtocolError)"),
        (Fault.STALL, 200, "timeout (Deadline)"),  # --timeout is the whole request
        (Fault.WRONG_USAGE, 200, "wrong usage: 4 completion tokens reported but 8"),
    ],
)
def test_fault_is_recorded_and_excluded(
    sim: Callable[..., AbstractContextManager[str]],
    run_harness: Callable[..., list[Evidence]],
    tmp_path: Path,
    fault: Fault,
    status: int,
    message: str,
) -> None:
    with sim(fault=fault, fault_match=FAULTY) as url:
        (ev,) = run_harness(url, timeout_s=0.5)
    failed = [r for r in ev.requests if not r.ok]
    assert [r.id for r in failed] == [FAULTY]
    assert failed[0].http_status == status
    assert failed[0].error is not None and message in failed[0].error
    assert len(ev.measured(2)) == 6  # the run went on after the fault

    report = summarize_path(tmp_path / "out")
    (group,) = report.groups
    assert (group.summary.completed, group.summary.failed) == (5, 1)
    assert len(group.summary.ttft_ms) == len(group.summary.e2el_ms) == 5
    assert "1 failed" in group.flags
    assert report.as_json()[0]["failed"] == 1


def test_unreachable_endpoint_is_a_bench_error(tmp_path: Path) -> None:
    from servekit.bench.runner import RunConfig, run_benchmark
    from servekit.errors import BenchError

    config = RunConfig(
        endpoint="http://127.0.0.1:9",
        model="m",
        prompt_min=1,
        prompt_max=1,
        output_tokens=1,
        concurrencies=(1,),
        requests=1,
        out=tmp_path,
        timeout_s=1,
    )

    class _Null:
        def advance(self, amount: float) -> None:
            pass

        def phase(self, description: str, total: int | None) -> None:
            pass

    with pytest.raises(BenchError, match="did not answer a probe request"):
        run_benchmark(config, _Null())
