"""`servekit fit` as a user runs it: a local directory, a config-only directory, REPO@COMMIT."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from servekit.fit.models import STABLE_JSON_KEYS
from tests.fit.checkpoints import LLAMA, llama_shapes, write_model
from tests.functional.helpers import EXAMPLES, servekit
from tests.hubserver import FakeRepo, HubServer, RepoFileSpec, hub_server

__all__ = ["hub_server"]


def _json(*args: str, env: dict[str, str] | None = None) -> dict:  # type: ignore[type-arg]
    result = servekit("fit", *args, "--json", env=env)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert set(STABLE_JSON_KEYS) <= set(data)
    return data  # type: ignore[no-any-return]


def test_a_local_directory_is_sized_from_its_headers(tmp_path: Path) -> None:
    model = write_model(tmp_path / "m", LLAMA, llama_shapes(LLAMA))
    data = _json(str(model), "--gpu", "H200", "--tp", "2", "--max-model-len", "2048")
    assert data["basis"] == "headers"
    assert data["fits"] is True
    assert data["kv_bytes_per_token_per_gpu"] == 2 * 2 * 1 * 8 * 2


def test_a_directory_with_only_config_json_is_estimated(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(LLAMA))
    data = _json(str(tmp_path), "--gpu", "RTX 4090")
    assert data["basis"] == "config"
    assert any("weaker basis" in r for r in data["reasons"])


def test_repo_at_commit_reads_headers_from_the_hub(hub_server: HubServer, tmp_path: Path) -> None:
    config = {**LLAMA, "vocab_size": 4096}
    model = write_model(tmp_path / "m", config, llama_shapes(config), shards=2)
    files = [RepoFileSpec.from_bytes(p.name, p.read_bytes()) for p in sorted(model.iterdir())]
    commit = hub_server.add_repo(FakeRepo("fit-cli/llama")).commit(files)
    data = _json(f"fit-cli/llama@{commit}", "--gpu", "H100", env=hub_server.env(tmp_path))
    assert data["basis"] == "headers"
    shards = [f for f in files if f.path.endswith(".safetensors")]
    sent = sum(hub_server.sent.get(f.sha256, 0) for f in shards)
    headers = sum(8 + int.from_bytes(f.data[:8], "little") for f in shards if f.data)
    assert sent == headers < sum(f.size for f in shards) / 50


def test_the_human_output_leads_with_the_verdict(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({**LLAMA, "max_position_embeddings": 10**9}))
    result = servekit("fit", str(tmp_path), "--gpu", "L40S")
    assert result.returncode == 0, result.stderr
    first = result.stdout.splitlines()[0]
    assert "does not fit" in first and "margin -" in first
    assert "the engine will refuse to start" in result.stdout


def test_bad_input_exits_with_the_fit_codes(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps(LLAMA))
    cases = [
        (("--gpu", "Voodoo"), 47, "unknown GPU"),
        (("--gpu", "H200", "--tp", "3"), 48, "pass --tp as one of"),
        (("--gpu", "H200", "--ep"), 48, "mixture-of-experts"),
    ]
    for args, code, text in cases:
        result = servekit("fit", str(tmp_path), *args)
        assert result.returncode == code, (args, result.stderr)
        assert text in result.stderr
    (tmp_path / "config.json").write_text(json.dumps({**LLAMA, "architectures": ["Nope"]}))
    result = servekit("fit", str(tmp_path), "--gpu", "H200")
    assert result.returncode == 46 and "known architectures" in result.stderr
    assert servekit("fit", "not-a-dir-or-repo", "--gpu", "H200").returncode == 2


def test_package_check_prints_the_prediction_beside_the_floor() -> None:
    result = servekit("package", "check", str(EXAMPLES / "llama-850m-h200"))
    assert result.returncode == 0, result.stderr
    assert "memory floor, weights per GPU: measured 1.59 GiB, predicted 1.59 GiB" in result.stdout
    data = json.loads(
        servekit("package", "check", str(EXAMPLES / "llama-850m-h200"), "--json").stdout
    )
    assert data["fit"]["measured_floor_weights_gib"] == 1.59
    assert data["fit"]["contradiction"] is None


def test_fit_package_with_a_local_copy_uses_the_package_target(tmp_path: Path) -> None:
    model = tmp_path / "m"
    model.mkdir()
    (model / "config.json").write_text((EXAMPLES / "llama-850m-h200/model/config.json").read_text())
    result = servekit("fit", "--package", str(EXAMPLES / "llama-850m-h200"), str(model), "--json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["prediction"]["gpu"] == "H200"
    assert data["measured_floor_weights_gib"] == 1.59


def test_fit_package_reads_the_pinned_commit_on_the_hub(
    hub_server: HubServer, tmp_path: Path
) -> None:
    config = {**LLAMA, "vocab_size": 4096}
    model = write_model(tmp_path / "m", config, llama_shapes(config), shards=2)
    files = [RepoFileSpec.from_bytes(p.name, p.read_bytes()) for p in sorted(model.iterdir())]
    commit = hub_server.add_repo(FakeRepo("fit-cli/pinned")).commit(files)
    package = Path(shutil.copytree(EXAMPLES / "llama-850m-h200", tmp_path / "pkg"))
    (package / "model" / "config.json").unlink()  # the Hub's config, not a vendored one
    text = (package / "package.yaml").read_text()
    text = text.replace("servekit-examples/llama-850m-seed0", "fit-cli/pinned")
    text = text.replace("c421cee2eeb7395b146335754e14ae3902317c9a", commit)
    (package / "package.yaml").write_text(text)
    result = servekit("fit", "--package", str(package), "--json", env=hub_server.env(tmp_path))
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["prediction"]["basis"] == "headers"
    assert data["prediction"]["model"] == f"fit-cli/pinned@{commit}"
    assert data["prediction"]["gpu"] == "H200"
    assert data["measured_floor_weights_gib"] == 1.59
    # the pinned tiny model is not the 850M one the floor was measured on: flagged
    assert "below the measured floor of 1.59 GiB" in data["contradiction"]
