"""REPO@COMMIT on the local Hub: config.json and headers only, by HTTP range reads."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from servekit.fit import FitOptions, Parallelism, from_directory, from_hub, predict
from servekit.fit.models import Basis
from servekit.weights.hub import Hub
from tests.fit.checkpoints import LLAMA, llama_shapes, write_model
from tests.hubserver import FakeRepo, HubServer, RepoFileSpec

CONFIG = {**LLAMA, "vocab_size": 4096}  # embeddings of 512 KiB: shards well above 100 KB


@pytest.fixture
def hub_env(hub_server: HubServer, tmp_path: Path) -> Iterator[HubServer]:
    saved = dict(os.environ)
    os.environ.update(hub_server.env(tmp_path))
    yield hub_server
    os.environ.clear()
    os.environ.update(saved)


def _publish(hub: HubServer, model: Path, name: str) -> tuple[str, list[RepoFileSpec]]:
    files = [RepoFileSpec.from_bytes(p.name, p.read_bytes()) for p in sorted(model.iterdir())]
    repo = hub.add_repo(FakeRepo(f"fit-tests/{name}"))
    return repo.commit(files), files


def _header_size(path: Path) -> int:
    return 8 + int.from_bytes(path.read_bytes()[:8], "little")


def test_hub_headers_only_transfer_the_header_bytes(hub_env: HubServer, tmp_path: Path) -> None:
    model = write_model(tmp_path / "model", CONFIG, llama_shapes(CONFIG), shards=2)
    commit, files = _publish(hub_env, model, "llama-headers")
    source, read = from_hub("fit-tests/llama-headers", commit, hub=Hub(endpoint=hub_env.url))

    shards = sorted(model.glob("*.safetensors"))
    headers = sum(_header_size(p) for p in shards)
    weights = sum(p.stat().st_size for p in shards)
    served = {f.path: hub_env.sent.get(f.sha256, 0) for f in files}
    assert read == headers
    assert sum(served[p.name] for p in shards) == headers  # what the server actually sent
    assert headers < weights / 50
    assert served["config.json"] == (model / "config.json").stat().st_size
    # into the cache the environment names now, not one huggingface_hub read at its import
    assert (Path(os.environ["HF_HUB_CACHE"]) / "models--fit-tests--llama-headers").is_dir()

    local = from_directory(model)
    assert sorted(t.name for t in source.tensors or []) == sorted(
        t.name for t in local.tensors or []
    )
    options = FitOptions(gpu="H200", parallelism=Parallelism(tp=2))
    remote_fit, local_fit = predict(source, options), predict(local, options)
    assert remote_fit.basis is Basis.HEADERS
    assert remote_fit.weights_bytes_per_gpu == local_fit.weights_bytes_per_gpu
    assert remote_fit.model == f"fit-tests/llama-headers@{commit}"


def test_a_repository_with_only_config_is_estimated(hub_env: HubServer, tmp_path: Path) -> None:
    model = tmp_path / "cfg"
    model.mkdir()
    (model / "config.json").write_text(json.dumps(CONFIG))
    commit, _ = _publish(hub_env, model, "llama-config-only")
    source, read = from_hub("fit-tests/llama-config-only", commit, hub=Hub(endpoint=hub_env.url))
    assert source.tensors is None and read == 0
    assert predict(source, FitOptions(gpu="H200")).basis is Basis.CONFIG
