"""The verdict, its margin and reasons; bad input is refused with what to pass instead."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from servekit.errors import ArchitectureError, GpuNameError, ParallelLayoutError
from servekit.fit import FitOptions, ModelSource, Parallelism, from_directory, predict
from servekit.fit.models import GIB, STABLE_JSON_KEYS
from servekit.fit.predict import OVERHEAD_SINGLE_GIB
from tests.fit.checkpoints import LLAMA

BIG = {
    **LLAMA,
    "hidden_size": 8192,
    "intermediate_size": 28672,
    "num_hidden_layers": 80,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "torch_dtype": "bfloat16",
}  # Llama 3.3 70B's shape


def _source(config: dict) -> ModelSource:  # type: ignore[type-arg]
    return ModelSource("test", config, None)


def test_a_70b_model_does_not_fit_one_h100_and_says_why() -> None:
    result = predict(_source(BIG), FitOptions(gpu="H100"))
    assert not result.fits
    assert result.weights_bytes_per_gpu > 130 * GIB
    assert result.margin_bytes < 0
    assert any("weights alone do not fit" in r for r in result.reasons)
    assert any("config.json alone" in r for r in result.reasons)


def test_the_margin_is_what_is_left_after_one_full_length_request() -> None:
    options = FitOptions(gpu="H200", parallelism=Parallelism(tp=4), max_model_len=8192)
    result = predict(_source(BIG), options)
    assert result.fits
    one_request = 8192 * result.kv.bytes_per_token_per_gpu
    assert result.margin_bytes == result.kv_cache_bytes_per_gpu - one_request
    assert (
        result.max_tokens_in_kv_cache
        == result.kv_cache_bytes_per_gpu // result.kv.bytes_per_token_per_gpu
    )
    allowed = int(139.80 * GIB * 0.92)
    assert (
        result.kv_cache_bytes_per_gpu
        == allowed - result.weights_bytes_per_gpu - result.overhead_bytes_per_gpu
    )


def test_the_model_context_is_the_default_and_too_long_a_context_does_not_fit() -> None:
    options = FitOptions(gpu="RTX 4090", gpu_memory_utilization=0.9)
    small = {**LLAMA, "max_position_embeddings": 1_000_000_000}
    result = predict(_source(small), options)
    assert result.max_model_len == 1_000_000_000
    assert not result.fits
    assert any("refuse to start" in r for r in result.reasons)
    assert predict(_source(small), options.model_copy(update={"max_model_len": 4096})).fits


def test_json_keys_are_the_documented_ones() -> None:
    data = predict(_source(LLAMA), FitOptions(gpu="H200")).as_json()
    assert list(data)[: len(STABLE_JSON_KEYS)] == list(STABLE_JSON_KEYS)
    documented = (Path(__file__).resolve().parents[2] / "docs" / "fit.md").read_text()
    assert all(f"`{key}`" in documented for key in STABLE_JSON_KEYS)
    assert data["basis"] == "config"
    assert data["overhead_gib_per_gpu"] == OVERHEAD_SINGLE_GIB
    json.dumps(data)


def test_a_multimodal_wrapper_is_read_from_text_config() -> None:
    wrapper = {
        "architectures": ["Llama4ForConditionalGeneration"],
        "text_config": {
            **LLAMA,
            "num_local_experts": 4,
            "intermediate_size": 32,
            "intermediate_size_mlp": 128,
            "interleave_moe_layer_step": 2,
        },
    }
    result = predict(
        _source(wrapper), FitOptions(gpu="H200", parallelism=Parallelism(tp=2, ep=True))
    )
    assert result.architecture == "Llama4ForConditionalGeneration"
    assert result.kv.bytes_per_token_per_gpu == 2 * 2 * 1 * 8 * 2


@pytest.mark.parametrize(
    ("config", "error", "hint"),
    [
        (
            {k: v for k, v in LLAMA.items() if k != "architectures"},
            ArchitectureError,
            "own config.json",
        ),
        ({**LLAMA, "architectures": ["MadeUpForCausalLM"]}, ArchitectureError, "LlamaForCausalLM"),
        (
            {k: v for k, v in LLAMA.items() if k != "num_attention_heads"},
            ArchitectureError,
            "num_attention_heads",
        ),
        ({**LLAMA, "architectures": ["DeepseekV3ForCausalLM"]}, ArchitectureError, "kv_lora_rank"),
    ],
)
def test_bad_configs_name_what_is_missing(config: dict, error: type, hint: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(error) as info:
        predict(_source(config), FitOptions(gpu="H200"))
    assert hint in str(info.value)


def test_an_unknown_gpu_lists_the_known_ones() -> None:
    with pytest.raises(GpuNameError, match="H200") as info:
        predict(_source(LLAMA), FitOptions(gpu="Voodoo 3"))
    assert info.value.exit_code == 47


def test_gpu_names_are_matched_loosely() -> None:
    for name in ("nvidia h200", "H200", "a100-80gb", "RTX 5090", "mi300x"):
        predict(_source(LLAMA), FitOptions(gpu=name))


def test_tp_must_divide_the_attention_heads() -> None:
    with pytest.raises(ParallelLayoutError, match="does not divide the 8 attention heads") as info:
        predict(_source(LLAMA), FitOptions(gpu="H200", parallelism=Parallelism(tp=3)))
    assert "1, 2, 4, 8" in str(info.value)


def test_expert_parallelism_needs_experts() -> None:
    with pytest.raises(ParallelLayoutError, match="mixture-of-experts") as info:
        predict(_source(LLAMA), FitOptions(gpu="H200", parallelism=Parallelism(ep=True)))
    assert "leave out --ep" in str(info.value)


def test_a_directory_without_config_json_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ArchitectureError, match=r"no config\.json"):
        from_directory(tmp_path)
