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

from pydantic import ValidationError

from servekit.errors import FileChangedError, UsageError
from servekit.seams import validation_problems
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
        pin = WeightsPin.model_validate(json.loads(text))
    except json.JSONDecodeError as exc:
        raise UsageError(
            f"{source}: not valid JSON (line {exc.lineno}): {exc.msg}",
            hint="pass a pin written by `servekit model pin` or `servekit model digest`",
        ) from exc
    except ValidationError as exc:
        raise UsageError(
            f"{source}: not a valid model pin: {validation_problems(exc)}",
            hint="docs/digest.md describes the pin format",
        ) from exc
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
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise UsageError(f"{path}: no such pin file", hint="check the path") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read the pin: {exc}") from exc
    return parse_pin(text, source=str(path))
