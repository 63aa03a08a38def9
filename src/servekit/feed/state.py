"""The feed state file: the last serial seen (verifier) and signed (publisher), per publisher.

One small JSON file, by default ``$SERVEKIT_CACHE_DIR/feed-state.json``::

    {"seen": {"<publisher>": {"serial": 7, "sha256": "<payload digest>"}},
     "signed": {"<publisher>": {"serial": 7, "sha256": "<payload digest>"}}}

It is written atomically (a temporary file renamed over it), so a crash leaves the old
state. It holds no secret: deleting it only forgets what was seen.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from servekit.config import load_settings
from servekit.errors import UsageError
from servekit.seams import parsing, problem_text, read_optional

STATE_FILE = "feed-state.json"
Side = Literal["seen", "signed"]


class Mark(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    serial: int = Field(ge=0)
    sha256: str


class FeedState(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    seen: dict[str, Mark] = Field(default_factory=dict)
    signed: dict[str, Mark] = Field(default_factory=dict)

    def last(self, side: Side, publisher: str) -> Mark | None:
        return (self.seen if side == "seen" else self.signed).get(publisher)

    def with_mark(self, side: Side, publisher: str, mark: Mark) -> FeedState:
        marks = {**(self.seen if side == "seen" else self.signed), publisher: mark}
        return self.model_copy(update={side: marks})


def default_state_path() -> Path:
    """``feed-state.json`` under the user's cache directory (``SERVEKIT_CACHE_DIR``)."""
    return load_settings().cache_dir / STATE_FILE


def read_state(path: Path) -> FeedState:
    """The state at ``path``; a missing file is an empty state."""

    def unreadable(exc: Exception) -> UsageError:
        return UsageError(
            f"{path}: the feed state file cannot be read: {problem_text(exc)}",
            hint="it only records serials; move it aside to start again (rollback protection "
            "restarts from the next feed seen)",
        )

    data = read_optional(path, lambda failure: unreadable(failure.exc))
    if data is None:
        return FeedState()
    with parsing(unreadable):
        return FeedState.model_validate_json(data)


def write_state(path: Path, state: FeedState) -> None:
    """Replace the state file atomically."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".feed-state-")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(state.model_dump(mode="json"), fh, indent=2, sort_keys=True)
        Path(tmp).replace(path)
    except OSError as exc:
        raise UsageError(
            f"{path}: the feed state file cannot be written: {exc.strerror}",
            hint="pass --feed-state (or --state) with a writable path, or set SERVEKIT_CACHE_DIR",
        ) from exc
