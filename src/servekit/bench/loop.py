"""Event-loop choice for the client and the simulator: uvloop when installed, else asyncio."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Callable, Coroutine
from enum import StrEnum
from typing import Any, TypeVar

from servekit.errors import UsageError

T = TypeVar("T")


class LoopKind(StrEnum):
    AUTO = "auto"
    UVLOOP = "uvloop"
    ASYNCIO = "asyncio"


def uvloop_available() -> bool:
    return importlib.util.find_spec("uvloop") is not None


def resolve(kind: LoopKind) -> LoopKind:
    """The loop that will actually run: ``auto`` picks uvloop when it is installed."""
    match kind:
        case LoopKind.AUTO:
            return LoopKind.UVLOOP if uvloop_available() else LoopKind.ASYNCIO
        case LoopKind.UVLOOP:
            if not uvloop_available():
                raise UsageError(
                    "uvloop is not installed",
                    hint="pip install 'servekit[bench]' or use --loop asyncio",
                )
            return kind
        case LoopKind.ASYNCIO:  # pragma: no branch
            return kind


def _factory(kind: LoopKind) -> Callable[[], asyncio.AbstractEventLoop]:
    if resolve(kind) is LoopKind.UVLOOP:
        import uvloop

        factory: Callable[[], asyncio.AbstractEventLoop] = uvloop.new_event_loop
        return factory
    return asyncio.new_event_loop


def run(main: Coroutine[Any, Any, T], kind: LoopKind = LoopKind.AUTO) -> T:
    """Run ``main`` to completion on a fresh loop of ``kind``."""
    with asyncio.Runner(loop_factory=_factory(kind)) as runner:
        return runner.run(main)
