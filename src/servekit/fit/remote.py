"""A model on the Hub at a commit: ``config.json`` and the safetensors headers only.

``config.json`` and the shard index are small and downloaded into the cache; each
shard's header is fetched with two HTTP range reads (its length, then its JSON)
through ``huggingface_hub``'s own session, so the endpoint, token and CDN redirects
are those of every other Hub call. Errors are translated by
:func:`servekit.weights.hub.hub_errors`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from servekit.errors import HeaderError
from servekit.fit.arch import read_config
from servekit.fit.headers import INDEX, ReadRange, parse_header, weight_files
from servekit.fit.models import Tensor
from servekit.weights.hub import Hub, hub_cache, hub_errors


@dataclass(frozen=True)
class RemoteModel:
    config: dict[str, Any]
    tensors: list[Tensor] | None
    header_bytes: int  # what the range reads transferred


def _range_reader(hub: Hub, repo: str, commit: str, path: str, counter: list[int]) -> ReadRange:
    from huggingface_hub import get_session, hf_hub_url, hf_raise_for_status
    from huggingface_hub.utils._headers import build_hf_headers

    url = hf_hub_url(repo, path, revision=commit, endpoint=hub.endpoint)
    headers = build_hf_headers(token=hub.token)

    def read(start: int, end: int) -> bytes:
        with hub_errors(repo, commit, f"reading the header of {path}"):
            response = get_session().get(url, headers={**headers, "Range": f"bytes={start}-{end}"})
            hf_raise_for_status(response)
        if response.status_code != 206:
            raise HeaderError(
                f"{repo}@{commit}/{path}: the server ignored the byte range "
                f"(HTTP {response.status_code}); servekit will not download the weights to size them",
                hint="use an endpoint that honours HTTP Range, or pass a local model directory",
            )
        counter[0] += len(response.content)
        return response.content

    return read


def fetch(repo: str, commit: str, *, hub: Hub, cache_dir: Path | None = None) -> RemoteModel:
    """``config.json`` and every shard's tensors of ``repo`` at ``commit``."""
    names = {f.path for f in hub.tree(repo, commit)}
    cache = cache_dir or hub_cache()
    if "config.json" not in names:
        from servekit.errors import ArchitectureError

        raise ArchitectureError(
            f"{repo}@{commit} has no config.json",
            hint="pass a model repository with a config.json, or a local directory",
        )
    config = read_config(hub.download(repo, commit, "config.json", cache))
    index = None
    if INDEX in names:
        index = json.loads(hub.download(repo, commit, INDEX, cache).read_text())
    files = weight_files(names, index)
    if not files:
        return RemoteModel(config=config, tensors=None, header_bytes=0)
    counter = [0]
    tensors: list[Tensor] = []
    for path in files:
        read = _range_reader(hub, repo, commit, path, counter)
        tensors += parse_header(read, f"{repo}@{commit}/{path}")
    return RemoteModel(config=config, tensors=tensors, header_bytes=counter[0])
