"""Multimodal wrappers sized from their language model's ``text_config`` plus the vision
tower; a config.json path; a package's own config and placeholder commit; a context
asked for past the model's own.

The configs in tests/assets/fit/configs are shaped like the published ones (README.md
there names each source).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from servekit.errors import ArchitectureError, FitError
from servekit.fit import FitOptions, Parallelism, package_fit, predict
from servekit.fit.arch import parse, read_config
from servekit.fit.kv import cost
from servekit.fit.models import TensorClass
from servekit.fit.sources import from_directory
from servekit.package import load_package
from servekit.weights.hub import Hub
from tests.cli.helpers import run_cli
from tests.functional.helpers import EXAMPLES, ROOT
from tests.hubserver import HubServer

CONFIGS = ROOT / "tests" / "assets" / "fit" / "configs"
KIMI = CONFIGS / "kimi-k2.5.json"
H200_TP8 = FitOptions(gpu="H200", parallelism=Parallelism(tp=8))


@pytest.mark.parametrize(
    ("name", "family", "vision_millions"),
    [
        ("kimi-k2.5", "mla", (440, 500)),  # MoonViT (SigLIP-so400m shape) + patch merger
        ("qwen2.5-vl-7b-instruct", "dense", (670, 680)),  # Qwen's stated 675M ViT
        ("gemma-3-27b-it", "dense", (410, 430)),  # SigLIP-so400m + one projection
        ("llama-4-maverick-17b-128e-instruct", "moe", (700, 1000)),
    ],
)
def test_each_wrapper_is_sized_from_its_language_model_and_vision_tower(
    name: str, family: str, vision_millions: tuple[int, int]
) -> None:
    arch = parse(read_config(CONFIGS / f"{name}.json"))
    assert arch.family == family and arch.multimodal
    low, high = vision_millions
    assert low * 10**6 <= arch.vision_params <= high * 10**6, arch.vision_params


def test_kimi_k25_fits_eight_h200_and_language_only_drops_the_tower() -> None:
    source = from_directory(KIMI)
    full = predict(source, H200_TP8)
    text = predict(source, H200_TP8.model_copy(update={"language_only": True}))
    vision = {c.tensor_class: c.bytes_per_gpu for c in full.by_class}[TensorClass.VISION]
    assert full.fits and full.architecture == "KimiK25ForConditionalGeneration"
    assert 60 * 2**30 < full.weights_bytes_per_gpu < 80 * 2**30  # ~595 GB of INT4 experts / 8
    assert full.weights_bytes_per_gpu - text.weights_bytes_per_gpu == vision > 0


def test_gemma_3_takes_the_defaults_its_config_leaves_out() -> None:
    arch = parse(read_config(CONFIGS / "gemma-3-27b-it.json"))
    assert (arch.vocab, arch.tie_embeddings) == (262208, True)
    assert arch.layer_types.count("full_attention") == 10  # every 6th of 62 layers
    full_only = arch.__class__(**{**arch.__dict__, "layer_types": ()})
    options = FitOptions(gpu="H200", max_model_len=131072)
    assert (
        cost(arch, options, 131072).bytes_per_token_per_gpu * 6
        < cost(full_only, options, 131072).bytes_per_token_per_gpu * 2
    )


def test_an_unlisted_wrapper_is_sized_from_a_known_text_config() -> None:
    config = read_config(KIMI)
    config["architectures"] = ["KimiK26VLForConditionalGeneration"]
    assert parse(config).family == "mla"
    config["text_config"]["model_type"] = "kimi_linear"
    with pytest.raises(ArchitectureError, match="text_config's model_type is 'kimi_linear'"):
        parse(config)


def test_fit_takes_a_config_json_path() -> None:
    code, out, err = run_cli(["fit", str(KIMI), "--gpu", "H200", "--tp", "8", "--json"])
    assert code == 0, err
    result = json.loads(out)
    assert result["basis"] == "config" and result["fits"] is True


def test_a_max_model_len_past_the_models_context_is_said() -> None:
    source = from_directory(CONFIGS / "qwen2.5-vl-7b-instruct.json")
    within = predict(source, FitOptions(gpu="H200", max_model_len=128000))
    past = predict(source, FitOptions(gpu="H200", max_model_len=200000))
    assert not any("exceeds the model's context" in r for r in within.reasons)
    assert (
        "--max-model-len 200,000 exceeds the model's context of 128,000 tokens" in past.reasons[0]
    )


def test_a_package_with_its_own_config_asks_no_hub(hub_server: HubServer) -> None:
    fit = package_fit(load_package(EXAMPLES / "llama-850m-h200"), hub=Hub(endpoint=hub_server.url))
    assert fit is not None and fit.result.basis.value == "config"
    assert hub_server.requests == []


def test_a_placeholder_commit_is_said_and_never_looked_up(hub_server: HubServer) -> None:
    with pytest.raises(FitError, match="is a placeholder commit") as info:
        package_fit(load_package(EXAMPLES / "kimi-k3-8xb300"), hub=Hub(endpoint=hub_server.url))
    assert hub_server.requests == [] and info.value.exit_code == 45


def test_a_placeholder_package_is_sized_from_a_config_given_beside_it(tmp_path: Path) -> None:
    code, out, err = run_cli(
        ["fit", "--package", str(EXAMPLES / "kimi-k3-8xb300"), str(KIMI), "--json"]
    )
    assert code == 0, err
    assert json.loads(out)["prediction"]["architecture"] == "KimiK25ForConditionalGeneration"


def test_package_check_does_not_send_a_placeholder_package_to_the_hub() -> None:
    code, out, err = run_cli(["package", "check", str(EXAMPLES / "kimi-k3-8xb300")])
    assert code == 0, err
    line = next(line for line in out.splitlines() if line.startswith("memory floor"))
    assert "model commit is a placeholder" in line and "pinned commit's headers" not in line


def test_a_placeholder_commit_on_the_command_line_is_said_not_looked_up(
    hub_server: HubServer,
) -> None:
    from servekit.fit.sources import resolve

    with pytest.raises(FitError, match="placeholder commit"):
        resolve("moonshotai/Kimi-K3@" + "0" * 40, hub=Hub(endpoint=hub_server.url))
    assert hub_server.requests == []
