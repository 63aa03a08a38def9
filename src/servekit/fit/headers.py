"""Safetensors headers: every tensor's dtype, shape and byte span, without the weights.

A safetensors file starts with an 8-byte little-endian header length, then that many
bytes of JSON mapping each tensor name to ``dtype``, ``shape`` and ``data_offsets``.
Locally the header is read from the file; on the Hub two HTTP range reads per shard
fetch exactly those bytes through ``huggingface_hub``'s session (tokens, endpoint,
redirects to the CDN), so no weight byte is downloaded.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from servekit.errors import HeaderError
from servekit.fit.models import Tensor

MAX_HEADER = 100 << 20  # the safetensors format caps a header at 100 MB
INDEX = "model.safetensors.index.json"

ReadRange = Callable[[int, int], bytes]  # (start, end inclusive) -> bytes


def _tensors(header: dict[str, Any], source: str) -> list[Tensor]:
    out = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        try:
            start, end = info["data_offsets"]
            out.append(
                Tensor(
                    name=name, dtype=info["dtype"], shape=tuple(info["shape"]), nbytes=end - start
                )
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise HeaderError(f"{source}: tensor {name!r} has a malformed header entry") from exc
    return out


def parse_header(read: ReadRange, source: str) -> list[Tensor]:
    """The tensors of one safetensors file, reading only its header through ``read``."""
    prefix = read(0, 7)
    if len(prefix) != 8:
        raise HeaderError(f"{source}: shorter than the 8-byte safetensors header length")
    (length,) = struct.unpack("<Q", prefix)
    if not 0 < length <= MAX_HEADER:
        raise HeaderError(
            f"{source}: header length {length} is not a safetensors header",
            hint="check that the file is a safetensors file and not a git-lfs pointer",
        )
    raw = read(8, 7 + length)
    if len(raw) != length:
        raise HeaderError(f"{source}: the header is truncated ({len(raw)} of {length} bytes)")
    try:
        header = json.loads(raw)
    except ValueError as exc:
        raise HeaderError(f"{source}: the header is not JSON: {exc}") from exc
    if not isinstance(header, dict):
        raise HeaderError(f"{source}: the header is not a JSON object")
    return _tensors(header, source)


def _file_reader(path: Path) -> ReadRange:
    def read(start: int, end: int) -> bytes:
        with path.open("rb") as f:
            f.seek(start)
            return f.read(end + 1 - start)

    return read


def weight_files(names: Iterable[str], index: dict[str, Any] | None) -> list[str]:
    """The safetensors files vLLM loads: those the index names, else every one."""
    if index is not None:
        return sorted(set(index.get("weight_map", {}).values()))
    return sorted(n for n in names if n.endswith(".safetensors"))


def local_tensors(directory: Path) -> list[Tensor] | None:
    """Every tensor of the local model directory's safetensors files; None without any."""
    index_path = directory / INDEX
    index = json.loads(index_path.read_text()) if index_path.is_file() else None
    files = weight_files((p.name for p in directory.glob("*.safetensors")), index)
    if not files:
        return None
    tensors: list[Tensor] = []
    for name in files:
        path = directory / name
        try:
            tensors += parse_header(_file_reader(path), str(path))
        except OSError as exc:
            raise HeaderError(f"{path}: cannot be read: {exc}") from exc
    return tensors
