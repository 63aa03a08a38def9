"""The pin: the package's model file list recomputes to the tree digest it pins
(scheme ``servekit-tree-v1``, docs/digest.md), as ``servekit verify kit`` checks."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from servekit.package.rules.context import Context
from servekit.package.rules.registry import Findings, RuleId, finding, rule

SCHEME = "servekit-tree-v1"


def listing_digest(files: list[dict[str, Any]]) -> str:
    """The tree digest of ``[{path, size, sha256}]`` (docs/digest.md, steps 2-4)."""
    ordered = sorted(files, key=lambda f: str(f["path"]).encode())
    lines = "".join(f"{f['sha256']} {int(f['size'])} {f['path']}\n" for f in ordered)
    return "sha256:" + hashlib.sha256(f"{SCHEME}\n{lines}".encode()).hexdigest()


def _pin_problem(ctx: Context) -> str | None:
    model = ctx.package.model
    if model.files is None:
        if any(True for _ in ctx.measured_figures()):
            return ("model.files names no pin file, so the tree digest the measured figures "
                    "rest on cannot be recomputed")  # fmt: skip
        return None  # reported figures only: nothing here was measured on these bytes
    try:
        pin = json.loads(ctx.loaded.source.read_bytes(model.files).decode("utf-8"))
        files = pin["files"]
        digest = listing_digest(files)
        total = sum(int(f["size"]) for f in files)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return f"{model.files} cannot be read as a pin file ({exc.__class__.__name__}: {exc})"
    if digest != model.tree_digest:
        return f"{model.files} lists files whose tree digest is {digest}, not {model.tree_digest}"
    if total != model.total_bytes:
        return f"{model.files} lists {total} bytes; model.total_bytes says {model.total_bytes}"
    if pin.get("tree_digest") not in (None, model.tree_digest):
        return f"{model.files} names tree digest {pin.get('tree_digest')}"
    return None


@rule(
    RuleId.PIN_IS_THE_PIN,
    "The model's pin file recomputes to the pinned tree digest and total size.",
    "The weights the kit pins are the weights that were measured, byte for byte.",
)
def pin_is_the_pin(ctx: Context) -> Findings:
    problem = _pin_problem(ctx)
    if problem:
        yield finding(RuleId.PIN_IS_THE_PIN, "model.tree_digest", problem,
                      "re-pin with `servekit model digest` and copy its tree digest")  # fmt: skip
