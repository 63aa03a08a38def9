"""Client overhead: what each client adds to TTFT, and how many events it parses per
CPU-second, against one simulator in the same run.

The simulator (its own core; 120 ms TTFT, 15 ms per token, 64-token outputs) is
measured at 64, 256 and 1024 concurrent streams with 200-token prompts, and at 64
streams with 36K-token prompts, by:

* servekit: ``servekit bench run`` (the CLI, as a user runs it);
* GuideLLM (PyPI ``guidellm``, run from its own virtual environment: it pulls in torch),
  with a local word-level tokenizer so its synthetic prompts need no network;
* a plain-socket floor: a raw asyncio protocol on the same event loop (uvloop when
  installed) that only counts events (no HTTP library, no JSON), the least a Python
  client can do.

Every client is a subprocess pinned to the client core; this script stays on the
simulator's core and samples the CPU of the client's whole process tree (GuideLLM
runs ten worker processes) from the first to the last poll that saw new tokens. Each
client sends ``streams`` warmup requests then ``streams`` measured ones, and reports
its own TTFT and ITL medians. Added latency = a client's TTFT median - 120 ms. The
simulator's own lateness is shown beside it (mean over every first token of the run,
warmups included, from its /metrics): where it is large, the simulator fell behind,
not the client. Rounds are interleaved and the load average is printed, since the
machine is shared.

``vllm bench serve`` is not measured: installing vLLM resolves to 198 packages with
torch 2.14 and the CUDA 13 wheels (pip's resolver downloaded 2.1 GB just to resolve).

``--before SRC`` adds a fourth client: ``servekit bench run`` from another checkout's
``src`` directory (an earlier transport), measured in the same rounds as this one.

Run: ``python bench/client_overhead.py [--rounds 2] [--guidellm PATH] [--before SRC]``.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from _sim import SIM_CPU, Window, load_average, pin_self, run_client, simulator, source_env

from servekit.bench.loop import LoopKind, run

TTFT_MS, ITL_MS, OUTPUT = 120.0, 15.0, 64
CASES = ((64, 200), (256, 200), (1024, 200), (64, 36000))  # (streams, prompt tokens)
PEERS_VENV = Path("/tmp/peers-venv")

# --- the plain-socket floor (run as `client_overhead.py --plain URL STREAMS PROMPT`) -----


class _Plain(asyncio.Protocol):
    def __init__(self) -> None:
        self.times: list[float] = []
        self.tail = b""
        self.done: asyncio.Future[None] | None = None

    def data_received(self, data: bytes) -> None:
        now = time.perf_counter()
        events = data.count(b'"text":"') - data.count(b'"text":""')
        self.times.extend([now] * events)
        self.tail = (self.tail + data)[-8:]
        if self.tail.endswith(b"0\r\n\r\n") and self.done is not None and not self.done.done():
            self.done.set_result(None)


async def _plain_stream(port: int, i: int, prompt: int) -> tuple[float, list[float]]:
    loop = asyncio.get_running_loop()
    transport, proto = await loop.create_connection(_Plain, "127.0.0.1", port)
    t0 = 0.0
    for rep in range(2):  # a warmup, then the measured request, as the others do
        text = f"plain-{rep}-{i} " + "word " * (prompt - 1)
        body = json.dumps({"model": "servekit-sim", "prompt": text, "max_tokens": OUTPUT,
                           "stream": True, "ignore_eos": True}).encode()  # fmt: skip
        proto.done, proto.times = loop.create_future(), []
        head = b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        transport.write(head + b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        t0 = time.perf_counter()
        await proto.done
    transport.close()
    return t0, proto.times


def plain_main(url: str, streams: int, prompt: int) -> None:
    port = int(url.rsplit(":", 1)[1])

    async def main() -> list[tuple[float, list[float]]]:
        return list(await asyncio.gather(*(_plain_stream(port, i, prompt) for i in range(streams))))

    results = run(main(), LoopKind.AUTO)  # uvloop when installed, as servekit uses
    ttfts = [(times[0] - t0) * 1000 for t0, times in results if times]
    itls = [(b - a) * 1000 for _, times in results for a, b in itertools.pairwise(times)]
    print(json.dumps({"ttft": statistics.median(ttfts), "itl": statistics.median(itls)}))


# --- the clients -------------------------------------------------------------------------


def servekit_client(
    url: str, streams: int, prompt: int, tmp: Path, src: Path | None = None
) -> tuple[Window, float, float]:
    out = tmp / "servekit"
    args = [sys.executable, "-m", "servekit.cli.main", "-q", "bench", "run", "--endpoint", url,
            "--model", "servekit-sim", "--input-tokens", f"{prompt}:{prompt}",
            "--output-tokens", str(OUTPUT), "--concurrency", str(streams),
            "--requests", str(streams), "--warmup", str(streams), "--timeout", "300",
            "--out", str(out), "--force", "--json"]  # fmt: skip
    window = run_client(args, url, tmp / "servekit.log", env=source_env(src))
    text = (tmp / "servekit.log").read_text()
    (row,) = json.loads(text[text.index("[") :])
    assert row["failed"] == 0, row
    return window, float(row["median_ttft_ms"]), float(row["median_itl_ms"])


def plain_client(url: str, streams: int, prompt: int, tmp: Path) -> tuple[Window, float, float]:
    args = [sys.executable, __file__, "--plain", url, str(streams), str(prompt)]
    window = run_client(args, url, tmp / "plain.log")
    row = json.loads((tmp / "plain.log").read_text().splitlines()[-1])
    return window, float(row["ttft"]), float(row["itl"])


def guidellm_client(
    guidellm: Path, tokenizer: Path
) -> Callable[[str, int, int, Path], tuple[Window, float, float]]:
    def measure(url: str, streams: int, prompt: int, tmp: Path) -> tuple[Window, float, float]:
        result = tmp / "guidellm.json"
        spec = {
            "backend": {"kind": "openai_http", "target": url, "model": "servekit-sim",
                        "request_format": "/v1/completions", "timeout": 300},
            "profile": {"kind": "concurrent", "streams": [streams],
                        "warmup": {"value": streams, "mode": "requests"}},
            "data": [{"kind": "synthetic_text", "prompt_tokens": prompt,
                      "output_tokens": OUTPUT}],
            "tokenizer": {"kind": "huggingface_auto", "model": str(tokenizer)},
            "constraints": [{"kind": "max_requests", "count": 2 * streams}],
            "outputs": [{"kind": "json", "path": str(result)}],
        }  # fmt: skip
        scenario = tmp / "scenario.json"
        scenario.write_text(json.dumps({"spec": spec}))
        args = [str(guidellm), "run", "-c", str(scenario), "--disable-progress"]
        window = run_client(args, url, tmp / "guidellm.log")
        metrics = json.loads(result.read_text())["benchmarks"][0]["metrics"]
        ttft = metrics["time_to_first_token_ms"]["successful"]["median"]
        itl = metrics["inter_token_latency_ms"]["successful"]["median"]
        return window, float(ttft), float(itl)

    return measure


def build_tokenizer(python: Path, where: Path) -> Path:
    """A word-level Hugging Face tokenizer over Faker's words (GuideLLM's prompt text):
    one token per word or punctuation mark, which the simulator counts the same way."""
    script = f"""
import json
from faker.providers.lorem.en_US import Provider
from tokenizers import Tokenizer, models, pre_tokenizers
words = sorted(set(Provider.word_list))
vocab = {{"[UNK]": 0}}
for w in words + [w.capitalize() for w in words] + list(".,?!'-"):
    vocab.setdefault(w, len(vocab))
tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
tok.save("{where}/tokenizer.json")
json.dump({{"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 10**6}},
          open("{where}/tokenizer_config.json", "w"))
"""
    where.mkdir(parents=True, exist_ok=True)
    subprocess.run([str(python), "-c", script], check=True)
    return where


# --- the run -----------------------------------------------------------------------------


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--guidellm", type=Path, default=PEERS_VENV / "bin" / "guidellm")
    parser.add_argument("--cases", default=",".join(f"{s}x{p}" for s, p in CASES))
    parser.add_argument("--before", type=Path, help="src/ of an earlier checkout, measured too")
    options = parser.parse_args()
    cases = [tuple(int(x) for x in c.split("x")) for c in options.cases.split(",")]
    pin_self(SIM_CPU)  # this script only polls; the clients get the other core
    with tempfile.TemporaryDirectory() as tmp_dir:
        tmp = Path(tmp_dir)
        clients: dict[str, Callable[[str, int, int, Path], tuple[Window, float, float]]] = {
            "servekit": servekit_client,
            "plain": plain_client,
        }
        if options.before is not None:
            before = options.before

            def before_client(url: str, streams: int, prompt: int, tmp: Path) -> Row:
                return servekit_client(url, streams, prompt, tmp, before)

            clients["before"] = before_client
        if options.guidellm.exists():
            python = options.guidellm.parent / "python"
            clients["guidellm"] = guidellm_client(
                options.guidellm, build_tokenizer(python, tmp / "tok")
            )
        else:
            print(f"GuideLLM not found at {options.guidellm}: not measured")
        rows = run_rounds(clients, cases, options.rounds, tmp)
    report(rows, cases, list(clients))
    return 0


Row = tuple[Window, float, float]


def run_rounds(
    clients: dict[str, Callable[[str, int, int, Path], Row]],
    cases: list[tuple[int, ...]],
    rounds: int,
    tmp: Path,
) -> dict[tuple[int, int, str], list[Row]]:
    rows: dict[tuple[int, int, str], list[Row]] = defaultdict(list)
    print(f"simulator: TTFT {TTFT_MS} ms, {ITL_MS} ms/token, {OUTPUT} tokens; "
          "each client on one core\n")  # fmt: skip
    header = f"{'round':>5} {'streams':>7} {'prompt':>6} {'client':<9} {'TTFT p50':>9} "
    print(header + f"{'added':>7} {'ITL p50':>8} {'events/s':>9} {'ev/CPU-s':>9} {'sim late':>8}")
    with simulator("--ttft-ms", str(TTFT_MS), "--itl-ms", str(ITL_MS)) as url:
        for round_no in range(1, rounds + 1):
            print(f"-- round {round_no}, load average {load_average()}")
            for streams, prompt in cases:
                names = list(clients)
                names = names[round_no % len(names) :] + names[: round_no % len(names)]
                for name in names:
                    window, ttft, itl = clients[name](url, streams, prompt, tmp)
                    rows[(streams, prompt, name)].append((window, ttft, itl))
                    added = ttft - TTFT_MS
                    print(f"{round_no:>5} {streams:>7} {prompt:>6} {name:<9} {ttft:9.2f} "
                          f"{added:+7.2f} {itl:8.2f} {window.events_per_s:9.0f} "
                          f"{window.events_per_cpu_s:9.0f} {window.late_first_ms:8.2f}",
                          flush=True)  # fmt: skip
        print(f"-- end, load average {load_average()}\n")
    return rows


def report(
    rows: dict[tuple[int, int, str], list[Row]], cases: list[tuple[int, ...]], names: list[str]
) -> None:
    """Medians over rounds, and servekit's ratios against each other client."""
    print("medians over rounds (added = TTFT p50 - 120 ms):")
    for streams, prompt in cases:
        med: dict[str, tuple[float, float, float]] = {}
        for name in names:
            got = rows[(streams, prompt, name)]
            added = statistics.median(t - TTFT_MS for _, t, _ in got)
            itl = statistics.median(i for _, _, i in got)
            per_cpu = statistics.median(w.events_per_cpu_s for w, _, _ in got)
            per_s = statistics.median(w.events_per_s for w, _, _ in got)
            late = statistics.median(w.late_first_ms for w, _, _ in got)
            med[name] = (added, itl, per_cpu)
            print(f"  {streams:>5} streams, {prompt:>5}-token prompts, {name:<9} added "
                  f"{added:+8.2f} ms  ITL p50 {itl:6.2f} ms  {per_s:7.0f} events/s  "
                  f"{per_cpu:8.0f} events/CPU-s  (simulator late {late:.2f} ms)")  # fmt: skip
        for name in names:
            if name == "servekit":
                continue
            ours, theirs = med["servekit"], med[name]
            print(f"    servekit vs {name}: events/CPU-s x{ours[2] / theirs[2]:.2f}, "
                  f"added latency {ours[0]:+.2f} vs {theirs[0]:+.2f} ms")  # fmt: skip


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "--plain":
        plain_main(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        sys.exit(0)
    sys.exit(main())
