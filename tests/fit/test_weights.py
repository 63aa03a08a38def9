"""Weight bytes per GPU under vLLM's sharding rules, from real safetensors headers."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from safetensors.numpy import save_file

from servekit.fit import FitOptions, Parallelism, from_directory, predict
from servekit.fit.arch import parse
from servekit.fit.estimate import tensors as estimated
from servekit.fit.models import Basis, TensorClass
from servekit.fit.weights import per_gpu, rope_cache
from tests.fit.checkpoints import (
    DEEPSEEK,
    LLAMA,
    deepseek_shapes,
    llama_shapes,
    nbytes,
    write_model,
)

# vLLM's rotary cos/sin table for LLAMA: 2048 positions x head dim 8 x 2 bytes, on every GPU
ROPE = 2048 * 8 * 2


def _classes(result) -> dict[TensorClass, int]:  # type: ignore[no-untyped-def]
    return {c.tensor_class: c.bytes_per_gpu for c in result.by_class}


def test_llama_tp1_counts_every_byte_of_the_headers(tmp_path: Path) -> None:
    shapes = llama_shapes(LLAMA)
    # vocab 1000 is padded to 1024 rows, as vLLM's vocab-parallel embedding does
    padding = 2 * 24 * LLAMA["hidden_size"] * 2
    result = predict(from_directory(write_model(tmp_path, LLAMA, shapes)), FitOptions(gpu="H200"))
    assert result.basis is Basis.HEADERS
    assert result.weights_bytes_per_gpu == nbytes(shapes) + padding + ROPE
    assert _classes(result)[TensorClass.ROPE_CACHE] == ROPE


def test_llama_tp2_splits_projections_and_kv_heads(tmp_path: Path) -> None:
    shapes = llama_shapes(LLAMA)
    options = FitOptions(gpu="H200", parallelism=Parallelism(tp=2))
    classes = _classes(predict(from_directory(write_model(tmp_path, LLAMA, shapes)), options))
    kv = sum(nbytes({n: s}) for n, s in shapes.items() if ".k_proj" in n or ".v_proj" in n)
    norms = sum(nbytes({n: s}) for n, s in shapes.items() if "norm" in n)
    assert classes[TensorClass.KV_PROJ] == kv // 2
    assert classes[TensorClass.REPLICATED] == norms
    assert classes[TensorClass.VOCAB] == 2 * 512 * 64 * 2  # 1024 padded rows / 2


def test_kv_heads_are_replicated_once_tp_exceeds_them(tmp_path: Path) -> None:
    shapes = llama_shapes(LLAMA)  # 2 KV heads
    options = FitOptions(gpu="H200", parallelism=Parallelism(tp=8))
    classes = _classes(predict(from_directory(write_model(tmp_path, LLAMA, shapes)), options))
    kv = sum(nbytes({n: s}) for n, s in shapes.items() if ".k_proj" in n or ".v_proj" in n)
    assert classes[TensorClass.KV_PROJ] == kv // 2  # one whole KV head of two on each GPU
    assert (
        classes[TensorClass.TP_SPLIT]
        == sum(
            nbytes({n: s})
            for n, s in shapes.items()
            if "q_proj" in n or "o_proj" in n or "mlp" in n
        )
        // 8
    )


def test_mla_moe_replicates_down_projections_and_skips_the_mtp_layer(tmp_path: Path) -> None:
    shapes = deepseek_shapes(DEEPSEEK)
    layout = Parallelism(tp=2)
    result = predict(
        from_directory(write_model(tmp_path, DEEPSEEK, shapes)),
        FitOptions(gpu="H200", parallelism=layout),
    )
    classes = _classes(result)
    mtp = {n: s for n, s in shapes.items() if n.startswith("model.layers.2.")}
    assert classes[TensorClass.NOT_LOADED] == 0
    assert any(
        c.tensors == len(mtp) for c in result.by_class if c.tensor_class is TensorClass.NOT_LOADED
    )
    down = (
        "q_a_proj",
        "kv_a_proj_with_mqa",
        "q_a_layernorm",
        "kv_a_layernorm",
        "norm",
        "mlp.gate.",
    )
    replicated = {n: s for n, s in shapes.items() if n not in mtp and any(d in n for d in down)}
    assert classes[TensorClass.REPLICATED] == nbytes(replicated)
    experts = {n: s for n, s in shapes.items() if n not in mtp and ".experts." in n}
    assert classes[TensorClass.ROUTED_EXPERT] == nbytes(experts) // 2
    # vLLM's MLA keeps W_UK_T and W_UV beside kv_b_proj: heads/TP x (nope + v) x rank x 2 bytes
    assert classes[TensorClass.ENGINE_COPY] == 2 * 4 * (8 + 8) * 16 * 2


def test_expert_parallelism_splits_experts_over_tp_times_dp(tmp_path: Path) -> None:
    source = from_directory(write_model(tmp_path, DEEPSEEK, deepseek_shapes(DEEPSEEK)))

    def experts(layout: Parallelism) -> int:
        result = predict(source, FitOptions(gpu="H200", parallelism=layout))
        return _classes(result)[TensorClass.ROUTED_EXPERT]

    tp1 = experts(Parallelism(tp=1))
    assert experts(Parallelism(tp=2)) == tp1 // 2
    assert experts(Parallelism(tp=1, dp=4, ep=True)) == tp1 // 4  # 4 experts, one per GPU
    assert experts(Parallelism(tp=1, dp=4)) == tp1  # DP without EP: every rank has them all


def test_pipeline_parallel_reports_the_busiest_stage(tmp_path: Path) -> None:
    shapes = llama_shapes(LLAMA)
    source = from_directory(write_model(tmp_path, LLAMA, shapes))
    whole = predict(source, FitOptions(gpu="H200")).weights_bytes_per_gpu
    staged = predict(source, FitOptions(gpu="H200", parallelism=Parallelism(pp=2)))
    assert whole / 2 < staged.weights_bytes_per_gpu < whole


@pytest.mark.parametrize(
    ("config", "shapes", "layout"),
    [
        (LLAMA, llama_shapes(LLAMA), Parallelism(tp=1)),
        (LLAMA, llama_shapes(LLAMA), Parallelism(tp=4)),
        (DEEPSEEK, deepseek_shapes(DEEPSEEK), Parallelism(tp=1)),
        (DEEPSEEK, deepseek_shapes(DEEPSEEK), Parallelism(tp=4)),
        (DEEPSEEK, deepseek_shapes(DEEPSEEK), Parallelism(tp=2, dp=2, ep=True)),
    ],
)
def test_config_estimate_matches_the_headers_of_an_unquantized_model(
    tmp_path: Path, config: dict, shapes: dict, layout: Parallelism
) -> None:
    arch = parse(config)
    from_headers = from_directory(write_model(tmp_path, config, shapes)).tensors
    assert from_headers is not None
    headers, _ = per_gpu(from_headers, arch, layout, language_only=False)
    estimate, _ = per_gpu(estimated(arch), arch, layout, language_only=False)
    assert estimate == headers


def test_float32_weights_are_counted_at_the_model_dtype(tmp_path: Path) -> None:
    shapes = llama_shapes(LLAMA)
    model = write_model(tmp_path, {**LLAMA, "torch_dtype": "bfloat16"}, shapes, dtype="float32")
    result = predict(from_directory(model), FitOptions(gpu="H200"))
    assert result.weights_bytes_per_gpu == nbytes(shapes) + 2 * 24 * 64 * 2 + ROPE


def test_a_vision_tower_is_counted_unless_language_only(tmp_path: Path) -> None:
    shapes = llama_shapes(LLAMA) | {"vision_tower.blocks.0.attn.qkv.weight": (96, 32)}
    source = from_directory(write_model(tmp_path, LLAMA, shapes))
    full = predict(source, FitOptions(gpu="H200")).weights_bytes_per_gpu
    text = predict(source, FitOptions(gpu="H200", language_only=True)).weights_bytes_per_gpu
    assert full - text == 96 * 32 * 2


def test_packed_4bit_bytes_come_from_the_headers_not_parameter_counts(tmp_path: Path) -> None:
    # an MXFP4-style expert: uint8 blocks of two 4-bit values, one uint8 scale per 32
    shapes = llama_shapes(LLAMA)
    model = write_model(tmp_path, LLAMA, shapes)
    extra = {"model.layers.0.mlp.experts.gate_up_proj_blocks": np.zeros((4, 256, 2, 16), "uint8")}
    save_file(extra, str(model / "extra.safetensors"))
    result = predict(from_directory(model), FitOptions(gpu="H200"))
    assert (
        result.weights_bytes_per_gpu == nbytes(shapes) + 2 * 24 * 64 * 2 + 4 * 256 * 2 * 16 + ROPE
    )
    assert math.isclose(
        result.weights_bytes_per_gpu / 2**30, result.as_json()["weights_gib_per_gpu"], abs_tol=1e-4
    )  # type: ignore[arg-type]


def test_a_float32_checkpoint_is_served_in_16_bits(tmp_path: Path) -> None:
    shapes = llama_shapes(LLAMA)
    model = write_model(tmp_path, {**LLAMA, "torch_dtype": "float32"}, shapes, dtype="float32")
    result = predict(from_directory(model), FitOptions(gpu="H200"))
    assert result.weights_bytes_per_gpu == nbytes(shapes) + 2 * 24 * 64 * 2 + ROPE


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({}, 2048 * 8 * 2),  # max_position_embeddings x head dim x the model's 2 bytes
        (  # Llama 3's rope type covers max_position_embeddings too
            {"rope_scaling": {"rope_type": "llama3", "factor": 8.0,
                              "original_max_position_embeddings": 256}},
            2048 * 8 * 2,
        ),
        (  # YaRN covers the original context x factor
            {"rope_scaling": {"type": "yarn", "factor": 4,
                              "original_max_position_embeddings": 256}},
            1024 * 8 * 2,
        ),
        ({"rope_scaling": {"rope_type": "linear", "factor": 2.0}}, 4096 * 8 * 2),
        ({"partial_rotary_factor": 0.5}, 2048 * 4 * 2),
        ({"rope_local_base_freq": 10_000}, 2 * 2048 * 8 * 2),  # Gemma 3: global and local
        (  # transformers 5: one configuration per layer type
            {"rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 2.0},
                                 "sliding_attention": {"rope_type": "default"}}},
            (4096 + 2048) * 8 * 2,
        ),
        (  # ... of the layer types the model has
            {"layer_types": ["full_attention", "full_attention"],
             "rope_parameters": {"full_attention": {"rope_type": "linear", "factor": 2.0},
                                 "sliding_attention": {"rope_type": "default"}}},
            4096 * 8 * 2,
        ),
    ],
)  # fmt: skip
def test_the_rotary_cache_is_one_table_per_rope_configuration(extra: dict, expected: int) -> None:
    assert rope_cache(parse({**LLAMA, **extra})) == expected


def test_the_rotary_cache_of_mla_uses_the_rope_head_dim() -> None:
    rope = {"type": "yarn", "factor": 40, "original_max_position_embeddings": 64}
    arch = parse({**DEEPSEEK, "rope_scaling": rope})
    assert rope_cache(arch) == 64 * 40 * DEEPSEEK["qk_rope_head_dim"] * 2


def test_gpt_oss_keeps_its_rotary_cache_in_float32() -> None:
    config = {**LLAMA, "architectures": ["GptOssForCausalLM"], "num_local_experts": 4}
    assert rope_cache(parse(config)) == 2048 * 8 * 4


def test_every_gpu_holds_the_whole_rotary_cache(tmp_path: Path) -> None:
    source = from_directory(write_model(tmp_path, LLAMA, llama_shapes(LLAMA)))
    for layout in (Parallelism(tp=2), Parallelism(pp=2)):
        result = predict(source, FitOptions(gpu="H200", parallelism=layout, max_model_len=64))
        assert _classes(result)[TensorClass.ROPE_CACHE] == ROPE
