"""Read and write ``PIN.json``: JSON, UTF-8, two-space indent, files sorted by path.

Reading checks the document against :class:`~servekit.weights.models.WeightsPin`, then
recomputes the tree digest from the listed files: a pin whose file list does not
match its own digest is refused.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from servekit.errors import FileChangedError, UsageError
from servekit.seams import ReadFailure, read_utf8, validating, validation_problems
from servekit.weights.digest import tree_digest
from servekit.weights.models import WeightsPin


def pin_json(pin: WeightsPin) -> str:
    """The canonical text of a pin file."""
    return json.dumps(pin.model_dump(mode="json"), indent=2, ensure_ascii=False) + "\n"


def write_pin(pin: WeightsPin, path: Path) -> None:
    """Write ``pin`` to ``path`` atomically (a reader never sees half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(pin_json(pin))
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def parse_pin(text: str, *, source: str) -> WeightsPin:
    """Parse and check pin text; ``source`` names it in messages."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"{source}: not valid JSON (line {exc.lineno}): {exc.msg}",
            hint="pass a pin written by `servekit model pin` or `servekit model digest`",
        ) from exc
    hint = "docs/digest.md describes the pin format"
    with validating(
        lambda exc: UsageError(
            f"{source}: not a valid model pin: {validation_problems(exc)}", hint=hint
        )
    ):
        pin = WeightsPin.model_validate(data)
    recomputed = tree_digest(pin.files)
    if recomputed != pin.tree_digest:
        raise FileChangedError(
            f"{source}: the files listed do not match the pin's own tree digest",
            file=source,
            expected=pin.tree_digest,
            actual=recomputed,
            hint="the pin was edited after it was made; take it again from its source",
        )
    return pin


def read_pin(path: Path) -> WeightsPin:
    """Read and check a pin file."""
    text = read_utf8(path, _unreadable)
    return parse_pin(text, source=str(path))


def _unreadable(failure: ReadFailure) -> UsageError:
    if failure.missing:
        return UsageError(f"{failure.path}: no such pin file", hint="check the path")
    return UsageError(f"{failure.path}: cannot read the pin: {failure.exc}")
