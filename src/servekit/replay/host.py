"""Facts about the machine a replay ran from, and the engine behind the endpoint.

Nothing here is trusted as a measurement: it names what the replay ran against, so a
reader of a reproduction knows which hardware and engine the numbers describe.
"""

from __future__ import annotations

import os
import platform
import shutil
import socket
import subprocess
from pathlib import Path
from typing import Any, Literal

import httpx

from servekit.replay.models import Gpu, HostFacts

_NVIDIA_QUERY = ("--query-gpu=name,memory.total,driver_version", "--format=csv,noheader")


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str | None:
    """The CPU model name from ``/proc/cpuinfo``, else what ``platform`` says."""
    try:
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                return value.strip()
    except OSError:
        pass
    return platform.processor() or None


def parse_nvidia_smi(text: str) -> tuple[Gpu, ...]:
    """GPUs from ``nvidia-smi --query-gpu=name,memory.total,driver_version`` CSV lines."""
    gpus = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if parts and parts[0]:
            gpus.append(Gpu(name=parts[0], memory=_at(parts, 1), driver=_at(parts, 2)))
    return tuple(gpus)


def _at(parts: list[str], index: int) -> str | None:
    return parts[index] if len(parts) > index and parts[index] else None


def visible_gpus() -> tuple[bool, tuple[Gpu, ...]]:
    """(nvidia-smi answered, its GPUs); no nvidia-smi is no GPU facts, not an error."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return False, ()
    try:
        done = subprocess.run(
            [exe, *_NVIDIA_QUERY], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False, ()
    return done.returncode == 0, parse_nvidia_smi(done.stdout) if done.returncode == 0 else ()


def _get_json(http: httpx.Client, path: str) -> Any:
    try:
        response = http.get(path)
        return response.json() if response.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return None


def engine_version(
    endpoint: str, timeout_s: float = 10.0
) -> tuple[str | None, Literal["/version", "/v1/models"] | None]:
    """The engine version from ``/version``, else the ``owned_by`` of ``/v1/models``."""
    with httpx.Client(base_url=endpoint, timeout=timeout_s) as http:
        data = _get_json(http, "/version")
        if isinstance(data, dict) and data.get("version") is not None:
            return str(data["version"]), "/version"
        models = _get_json(http, "/v1/models")
    entries = models.get("data") if isinstance(models, dict) else None
    if isinstance(entries, list) and entries and isinstance(entries[0], dict):
        owner = entries[0].get("owned_by")
        if owner:
            return str(owner), "/v1/models"
    return None, None


def host_facts(endpoint: str) -> HostFacts:
    """Every fact of :class:`HostFacts` for this machine and ``endpoint``."""
    answered, gpus = visible_gpus()
    version, source = engine_version(endpoint)
    return HostFacts(
        hostname=socket.gethostname(),
        os=platform.platform(),
        python=platform.python_version(),
        cpu=cpu_model(),
        cpu_count=os.cpu_count(),
        gpus=gpus,
        nvidia_smi=answered,
        engine_version=version,
        engine_version_source=source,
    )
