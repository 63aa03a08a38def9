"""The GPU table (``gpus.json``): memory as sold and as the runtime reports it, with sources."""

from __future__ import annotations

import json
import re
from functools import cache
from importlib.resources import files

from servekit.errors import GpuNameError
from servekit.fit.models import GpuSpec


@cache
def table() -> dict[str, GpuSpec]:
    """Every GPU in the table, by name."""
    raw = json.loads(files("servekit.fit").joinpath("gpus.json").read_text(encoding="utf-8"))
    return {g["name"]: GpuSpec.model_validate(g) for g in raw["gpus"]}


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower().removeprefix("nvidia").removeprefix("amd"))


def lookup(name: str) -> GpuSpec:
    """The GPU called ``name`` (case, spaces, dashes and an NVIDIA/AMD prefix ignored)."""
    by_key = {_key(n): spec for n, spec in table().items()}
    spec = by_key.get(_key(name))
    if spec is None:
        raise GpuNameError(
            f"unknown GPU {name!r}",
            hint="pass one of: " + ", ".join(table()),
        )
    return spec
