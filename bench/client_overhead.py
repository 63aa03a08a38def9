"""Client overhead: what the harness adds to latency, and how many events it parses on one core.

Against one simulator (its own core; 120 ms TTFT, 15 ms per token, 64-token outputs),
at 64, 256 and 1024 concurrent streams, this measures in the same run:

* servekit's harness (``servekit.bench``, httpx with its stack transport), and
* a plain-socket reference client (raw asyncio protocol, no HTTP library), the floor.

Added latency = measured median TTFT - configured TTFT. Events/s = content events parsed
per second of the group's duration, and per second of client CPU. The peers named by the
issue are checked and reported plainly when they cannot run here. Run:
``python bench/client_overhead.py``.
"""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import json
import resource
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from _sim import pin_self, simulator

from servekit.bench.runner import RunConfig, run_benchmark
from servekit.bench.summary import summarize_path
from servekit.package.evidence import load_evidence

TTFT_MS, ITL_MS, OUTPUT = 120.0, 15.0, 64
STREAMS = (64, 256, 1024)


class _Quiet:
    def advance(self, amount: float) -> None:
        pass


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def servekit_client(url: str, out: Path, streams: int) -> dict[str, float]:
    config = RunConfig(
        endpoint=url, model="servekit-sim", prompt_min=200, prompt_max=200,
        output_tokens=OUTPUT, concurrencies=(streams,), requests=streams, warmup=streams,
        out=out, timeout_s=120,
    )  # fmt: skip
    cpu = _cpu()
    run_benchmark(config, _Quiet())
    cpu = _cpu() - cpu
    (row,) = summarize_path(out).as_json()
    ev = load_evidence(out / "run-1.jsonl")
    events = sum(len(r.t_content) for r in ev.measured(streams))
    queue = statistics.median(
        (r.t_send - (r.t_start or r.t_send)) * 1000 for r in ev.measured(streams)
    )
    return {
        "ttft": float(row["median_ttft_ms"]),  # type: ignore[arg-type]
        "itl": float(row["median_itl_ms"]),  # type: ignore[arg-type]
        "events_per_s": events / float(row["duration"]),  # type: ignore[arg-type]
        "cpu_s": cpu,
        "queue_ms": queue,
    }


class _Plain(asyncio.Protocol):
    def __init__(self, done: asyncio.Future[None]) -> None:
        self.done, self.times, self.tail, self.t0 = done, [], b"", 0.0

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        self.times.extend([now] * data.count(b'"text":"'))
        self.tail = (self.tail + data)[-8:]
        if self.tail.endswith(b"0\r\n\r\n") and not self.done.done():
            self.done.set_result(None)


async def _plain_one(port: int, i: int, out: list[tuple[float, list[float]]]) -> None:
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    transport, proto = await loop.create_connection(lambda: _Plain(done), "127.0.0.1", port)
    for rep in range(2):  # the first is a warmup, as for the harness
        body = json.dumps({"model": "servekit-sim", "prompt": f"plain-{rep}-{i} " + "word " * 199,
                           "max_tokens": OUTPUT, "stream": True, "ignore_eos": True}).encode()  # fmt: skip
        proto.done, proto.times = loop.create_future(), []
        proto.t0 = time.perf_counter()
        transport.write(
            b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s"
            % (len(body), body)
        )
        await proto.done
    out.append((proto.t0, proto.times))
    transport.close()


def plain_client(url: str, streams: int) -> dict[str, float]:
    port = int(url.rsplit(":", 1)[1])
    results: list[tuple[float, list[float]]] = []

    async def main() -> None:
        await asyncio.gather(*(_plain_one(port, i, results) for i in range(streams)))

    cpu = _cpu()
    asyncio.run(main())
    cpu = _cpu() - cpu
    ttfts = [(times[0] - t0) * 1000 for t0, times in results if times]
    itls = [(b - a) * 1000 for _, times in results for a, b in itertools.pairwise(times)]
    start = min(t0 for t0, _ in results)
    end = max(times[-1] for _, times in results if times)
    events = sum(len(times) for _, times in results)
    return {"ttft": statistics.median(ttfts), "itl": statistics.median(itls),
            "events_per_s": events / (end - start), "cpu_s": cpu, "queue_ms": 0.0}  # fmt: skip


def peers() -> list[str]:
    lines = []
    if importlib.util.find_spec("vllm") is None:
        lines.append(
            "vllm bench serve: not measured (vLLM is not installed here: its wheels need CUDA torch)"
        )
    guidellm = shutil.which("guidellm")
    lines.append(
        "GuideLLM: not measured in this run"
        + (f" (found {guidellm}; its 0.8 CLI needs a Hugging Face tokenizer for synthetic "
           "prompts, and this script does not drive it yet)" if guidellm else " (not installed: pip install 'servekit[bench]')")
    )  # fmt: skip
    return lines


def main() -> int:
    pin_self()
    print(f"simulator: TTFT {TTFT_MS} ms, {ITL_MS} ms/token, {OUTPUT} tokens; client on one core\n")
    print(
        f"{'streams':>7} {'client':<9} {'TTFT p50':>9} {'added ms':>9} {'ITL p50':>8} {'events/s':>9} {'ev/CPU-s':>9} {'send queue ms':>13}"
    )
    with (
        simulator("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS)) as url,
        tempfile.TemporaryDirectory() as tmp,
    ):
        for streams in STREAMS:
            rows = {
                "plain": plain_client(url, streams),
                "servekit": servekit_client(url, Path(tmp) / str(streams), streams),
            }
            for name, r in rows.items():
                evs = r["events_per_s"]
                total_events = streams * OUTPUT * 2
                print(
                    f"{streams:>7} {name:<9} {r['ttft']:9.2f} {r['ttft'] - TTFT_MS:+9.2f} {r['itl']:8.2f} {evs:9.0f} {total_events / r['cpu_s']:9.0f} {r['queue_ms']:13.2f}"
                )
            ratio = (rows["servekit"]["ttft"] - TTFT_MS) - (rows["plain"]["ttft"] - TTFT_MS)
            print(f"{'':>7} servekit adds {ratio:+.2f} ms of TTFT over the plain-socket floor")
    print()
    for line in peers():
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
