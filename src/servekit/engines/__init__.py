"""Serving engines: one module per engine, each defining one :class:`EngineSpec` (``SPEC``).

:data:`ENGINES` maps the name a package's ``engine.name`` uses to its spec;
:func:`engine` finds one by name (``TensorRT_LLM`` and ``tensorrt-llm`` are one name) or
refuses, listing the engines servekit knows. Adding an engine is one module here and its
entry in :data:`ENGINES`.
"""

from __future__ import annotations

from servekit.engines import sglang, sim, transformers, vllm
from servekit.engines.models import (
    COMMON_LOAD,
    EngineSpec,
    FitConstants,
    Flag,
    FlagKind,
    FlagValue,
    MultiNode,
    Probe,
)
from servekit.errors import UsageError

ENGINES: dict[str, EngineSpec] = {
    spec.name: spec for spec in (vllm.SPEC, sglang.SPEC, transformers.SPEC, sim.SPEC)
}

OTHER_PREALLOCATING = frozenset(
    {"tensorrt-llm", "trtllm", "text-generation-inference", "tgi", "lmdeploy"}
)
"""Engines servekit has no module for yet, known to reserve most GPU memory up front."""


def engine_key(name: str) -> str:
    """An engine name as the lists spell it: lower case, ``-`` for ``_`` (``TensorRT_LLM``)."""
    return name.strip().lower().replace("_", "-")


def find(name: str) -> EngineSpec | None:
    """The spec of engine ``name``, or None when servekit has no module for it."""
    return ENGINES.get(engine_key(name))


def engine(name: str) -> EngineSpec:
    """The spec of engine ``name``, or a refusal listing the engines servekit knows."""
    found = find(name)
    if found is None:
        raise UsageError(
            f"servekit has no engine module for '{name}'",
            hint=f"engines: {', '.join(sorted(ENGINES))} (add one in servekit/engines/)",
        )
    return found


__all__ = [
    "COMMON_LOAD",
    "ENGINES",
    "OTHER_PREALLOCATING",
    "EngineSpec",
    "FitConstants",
    "Flag",
    "FlagKind",
    "FlagValue",
    "MultiNode",
    "Probe",
    "engine",
    "engine_key",
    "find",
]
