"""KV cache bytes per token per GPU: GQA, MLA, FP8, sliding-window and linear layers."""

from __future__ import annotations

from servekit.fit.arch import parse
from servekit.fit.kv import cost
from servekit.fit.models import FitOptions, KvDtype, Parallelism
from tests.fit.checkpoints import DEEPSEEK, LLAMA


def _cost(config: dict, tp: int = 1, dtype: KvDtype = KvDtype.AUTO, max_len: int = 1024):  # type: ignore[no-untyped-def, type-arg]
    options = FitOptions(gpu="H200", parallelism=Parallelism(tp=tp), kv_cache_dtype=dtype)
    return cost(parse(config), options, max_len)


def test_gqa_is_two_times_kv_heads_per_gpu_times_head_dim_times_dtype() -> None:
    # 2 layers x 2 (K, V) x 2 KV heads x head dim 8 x 2 bytes
    assert _cost(LLAMA).bytes_per_token_per_gpu == 2 * 2 * 2 * 8 * 2
    assert _cost(LLAMA, tp=2).bytes_per_token_per_gpu == 2 * 2 * 1 * 8 * 2
    # TP 8 over 2 KV heads: each GPU still keeps one whole head
    assert _cost(LLAMA, tp=8).bytes_per_token_per_gpu == 2 * 2 * 1 * 8 * 2
    assert any("replicated" in n for n in _cost(LLAMA, tp=8).notes)


def test_fp8_kv_cache_halves_a_16_bit_cache() -> None:
    assert _cost(LLAMA, dtype=KvDtype.FP8).bytes_per_token_per_gpu == 2 * 2 * 2 * 8


def test_mla_keeps_one_latent_per_layer_on_every_gpu() -> None:
    # 2 layers x (kv_lora_rank 16 + rope 4) x 2 bytes, whatever the TP
    assert _cost(DEEPSEEK).bytes_per_token_per_gpu == 2 * 20 * 2
    assert _cost(DEEPSEEK, tp=8).bytes_per_token_per_gpu == 2 * 20 * 2


def test_sliding_window_layers_cost_a_window_per_request() -> None:
    config = {
        **LLAMA,
        "sliding_window": 128,
        "layer_types": ["sliding_attention", "full_attention"],
    }
    kv = _cost(config, max_len=4096)
    per_layer = 2 * 2 * 8 * 2
    assert kv.bytes_per_token_per_gpu == per_layer  # only the full-attention layer grows
    assert kv.bytes_per_request_per_gpu == 128 * per_layer
    assert _cost(config, max_len=64).bytes_per_request_per_gpu == 64 * per_layer


def test_linear_attention_layers_keep_a_fixed_state() -> None:
    config = {
        **LLAMA,
        "layer_types": ["linear_attention", "full_attention"],
        "linear_num_value_heads": 4,
        "linear_key_head_dim": 8,
        "linear_value_head_dim": 8,
    }
    kv = _cost(config, tp=2)
    assert kv.bytes_per_token_per_gpu == 2 * 1 * 8 * 2
    assert kv.bytes_per_request_per_gpu == 4 * 8 * 8 * 4 // 2
