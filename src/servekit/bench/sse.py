"""Incremental parsing of an OpenAI-style server-sent event stream.

Bytes are fed as they arrive with the monotonic time of their arrival; each
``data:`` line is one event (OpenAI-compatible servers never split an event over
several ``data:`` lines). The first non-empty content (``text`` for completions,
``delta.content`` or a reasoning delta for chat) starts the TTFT clock: a role-only
chat chunk is an event, never content.
"""

from __future__ import annotations

import json
from typing import Any

_FIELDS = (b"event:", b"id:", b"retry:")


class StreamState:
    """What one response stream has shown so far."""

    __slots__ = (
        "chat",
        "done",
        "error",
        "finish_reason",
        "pieces",
        "rest",
        "t_content",
        "t_first_content",
        "t_first_event",
        "usage",
    )

    def __init__(self, chat: bool) -> None:
        self.chat = chat
        self.rest = b""
        self.t_first_event: float | None = None
        self.t_first_content: float | None = None
        self.t_content: list[float] = []
        self.pieces: list[str] = []
        self.usage: dict[str, Any] | None = None
        self.finish_reason: str | None = None
        self.done = False
        self.error: str | None = None

    def feed(self, data: bytes, now: float) -> None:
        """Parse every complete line in ``data``; keep a partial last line for later."""
        lines = (self.rest + data if self.rest else data).split(b"\n")
        self.rest = lines.pop()
        for line in lines:
            self._line(line, now)
            if self.error is not None:
                return

    def close(self) -> None:
        """End of body: a non-empty partial line left over is a truncated event."""
        if self.rest.strip() and self.error is None:
            self._line(self.rest, None)

    def _line(self, line: bytes, now: float | None) -> None:
        if line.endswith(b"\r"):
            line = line[:-1]
        if not line or line[0] == 0x3A:  # blank separator or ":" comment
            return
        if line.startswith(b"data:"):
            if now is None:
                self.error = f"stream ended inside an event: {line[:80]!r}"
                return
            self._data(line[6:] if line[5:6] == b" " else line[5:], now)
        elif not line.startswith(_FIELDS):
            self.error = f"malformed event line: {line[:80]!r}"

    def _data(self, payload: bytes, now: float) -> None:
        if self.t_first_event is None:
            self.t_first_event = now
        if payload == b"[DONE]":
            self.done = True
            return
        try:
            obj = json.loads(payload)
        except ValueError:
            self.error = f"malformed event data: {payload[:80]!r}"
            return
        if not isinstance(obj, dict):
            self.error = f"event data is not a JSON object: {payload[:80]!r}"
            return
        if "error" in obj:
            self.error = f"server error mid-stream: {_message(obj['error'])}"
            return
        choices = obj.get("choices")
        if choices:
            self._choice(choices[0], now)
        usage = obj.get("usage")
        if usage:
            self.usage = usage

    def _choice(self, choice: Any, now: float) -> None:
        if not isinstance(choice, dict):
            return
        if self.chat:
            delta = choice.get("delta") or {}
            text = delta.get("content") or delta.get("reasoning_content") or delta.get("reasoning")
        else:
            text = choice.get("text")
        if text:
            if self.t_first_content is None:
                self.t_first_content = now
            self.t_content.append(now)
            self.pieces.append(text)
        reason = choice.get("finish_reason")
        if reason:
            self.finish_reason = str(reason)


def _message(error: Any) -> str:
    if isinstance(error, dict):
        return str(error.get("message") or error)
    return str(error)
