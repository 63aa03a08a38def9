"""Transport framing: CPU per streamed event in the benchmark client's read callback,
this checkout's transport against an earlier one (``--before SRC``), in the same process.

Each transport's connection gets a whole response the way a server streams it: the
head, then one chunk per read, each chunk one server-sent event as vLLM writes it,
then the last chunk; many responses in a row on one kept-alive connection. The
transport is the only difference: both feed the same SSE parser (this checkout's
:class:`~servekit.bench.sse.StreamState`), and a second measurement replaces that
parser with one that ignores its input, leaving the framing alone. Rounds alternate
the two transports; the median of the rounds is reported.

Run: ``python bench/transport_framing.py --before SRC [--rounds 7] [--events 200000]``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import statistics
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Any

from servekit.bench import transport
from servekit.bench.sse import StreamState

EVENT = (
    b'data: {"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":'
    b'[{"index":0,"text":" word","logprobs":null,"finish_reason":null}]}\n\n'
)
HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
    b"transfer-encoding: chunked\r\n\r\n"
)
PER_RESPONSE = 64


class _Transport:
    """Just enough of an asyncio transport: writes vanish, the buffer is always empty."""

    def write(self, data: bytes) -> None:
        pass

    def get_write_buffer_size(self) -> int:
        return 0

    def set_write_buffer_limits(self, high: int) -> None:
        pass

    def get_extra_info(self, name: str) -> Any:
        return None

    def close(self) -> None:
        pass


class _Ignore(StreamState):
    def feed(self, data: bytes, now: float) -> None:
        pass


def _load_before(src: Path) -> ModuleType:
    path = src / "servekit" / "bench" / "transport.py"
    spec = importlib.util.spec_from_file_location("before_transport", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def _reads() -> list[bytes]:
    chunk = b"%x\r\n%s\r\n" % (len(EVENT), EVENT)
    return [HEAD, *([chunk] * PER_RESPONSE), b"0\r\n\r\n"]


async def _measure(module: ModuleType, events: int, state_type: type[StreamState]) -> float:
    """Microseconds of CPU per event for ``events`` events through ``module``'s connection."""
    conn = module._Connection(60.0)
    conn.connection_made(_Transport())
    reads = _reads()
    responses = events // PER_RESPONSE
    started = time.process_time()
    for _ in range(responses):
        done = conn.start(b"", state_type(chat=False), 0.0)
        for data in reads:
            conn.data_received(data)
        assert done.done() and conn.reusable
    spent = time.process_time() - started
    return 1e6 * spent / (responses * PER_RESPONSE)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", type=Path, required=True, help="src/ of an earlier checkout")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--events", type=int, default=200_000)
    options = parser.parse_args()
    modules = {"now": transport, "before": _load_before(options.before)}
    for label, state_type in (("with SSE parsing", StreamState), ("framing only", _Ignore)):
        times: dict[str, list[float]] = {name: [] for name in modules}
        for round_no in range(options.rounds):
            names = list(modules)[round_no % 2 :] + list(modules)[: round_no % 2]
            for name in names:
                spent = asyncio.run(_measure(modules[name], options.events, state_type))
                times[name].append(spent)
        now, before = (statistics.median(times[n]) for n in ("now", "before"))
        print(f"{label:<17} before {before:6.3f} µs/event  now {now:6.3f} µs/event  "
              f"(x{before / now:.2f} fewer CPU-s per event; medians of {options.rounds} rounds, "
              f"{options.events} events each)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
