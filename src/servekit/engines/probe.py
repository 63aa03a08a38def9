"""Ask a running engine who it is: its version and the models it serves.

Each engine's :class:`~servekit.engines.models.Probe` names the paths: vLLM answers
``/version`` (``{"version": "0.11.0"}``); SGLang answers ``/get_server_info`` (its server
arguments and ``version``), ``/get_model_info`` (``model_path``) and, in newer releases,
``/version``; every engine lists ``/v1/models``. A path that does not answer is skipped;
nothing here guesses a value the server did not state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from servekit.engines.models import EngineSpec


@dataclass(frozen=True)
class Identity:
    """What a running engine states about itself (None: it did not say)."""

    version: str | None
    served_models: tuple[str, ...] | None
    owned_by: str | None
    model_path: str | None


def _get(http: httpx.Client, path: str) -> Any:
    try:
        response = http.get(path)
        return response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None


def _version(http: httpx.Client, spec: EngineSpec) -> str | None:
    for path in spec.probe.version:
        data = _get(http, path)
        if isinstance(data, dict) and isinstance(data.get("version"), str):
            return str(data["version"])
    return None


def _models(http: httpx.Client, spec: EngineSpec) -> tuple[tuple[str, ...] | None, str | None]:
    data = _get(http, spec.probe.models)
    entries = data.get("data") if isinstance(data, dict) else None
    if not isinstance(entries, list):
        return None, None
    models = [m for m in entries if isinstance(m, dict)]
    ids = tuple(str(m["id"]) for m in models if isinstance(m.get("id"), str))
    owners = {m["owned_by"] for m in models if isinstance(m.get("owned_by"), str)}
    return ids, (owners.pop() if len(owners) == 1 else None)


def _model_path(http: httpx.Client, spec: EngineSpec) -> str | None:
    if spec.probe.model_info is None:
        return None
    data = _get(http, spec.probe.model_info)
    path = data.get("model_path") if isinstance(data, dict) else None
    return path if isinstance(path, str) else None


def identify(base_url: str, spec: EngineSpec, *, timeout_s: float = 5.0) -> Identity:
    """Probe the engine at ``base_url`` by ``spec``'s paths."""
    with httpx.Client(base_url=base_url, timeout=timeout_s) as http:
        models, owner = _models(http, spec)
        return Identity(_version(http, spec), models, owner, _model_path(http, spec))


def healthy(http: httpx.Client, spec: EngineSpec) -> bool:
    """Whether the engine's readiness path answers 200 now, asked through ``http`` (one client
    for all the polls of a start: a new one builds a TLS context, tens of milliseconds of
    CPU that the starting engine would lose every poll)."""
    try:
        return http.get(spec.probe.health).status_code == 200
    except httpx.HTTPError:
        return False
