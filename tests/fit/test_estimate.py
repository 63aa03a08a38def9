"""Tensors estimated from ``config.json``: the bytes each quantization format stores.

The expected sizes are written from the tensors each format's checkpoints hold (GPTQ's
``qweight``/``qzeros``/``scales``, DeepSeek's FP8 ``weight_scale_inv`` blocks, MXFP4's
packed blocks and scales), not from the estimator's own formulas.
"""

from __future__ import annotations

import math
from typing import Any

from servekit.fit.arch import parse
from servekit.fit.estimate import linear_bytes, tensors
from tests.fit.checkpoints import DEEPSEEK, LLAMA

OUT, INP = 256, 512  # one linear weight: 256 output rows, 512 input columns


def _arch(quant: dict[str, Any] | None = None, **fields: Any) -> Any:
    config = {**LLAMA, **fields}
    if quant is not None:
        config["quantization_config"] = quant
    return parse(config)


def _bytes(quant: dict[str, Any], name: str = "model.layers.0.mlp.up_proj.weight") -> int:
    return linear_bytes(name, OUT, INP, _arch(quant), expert=False)


def _sizes(arch: Any) -> dict[str, int]:
    return {t.name: t.nbytes for t in tensors(arch)}


def test_an_unquantized_linear_is_its_parameters_at_the_model_dtype() -> None:
    assert linear_bytes("x.weight", OUT, INP, _arch(), expert=False) == OUT * INP * 2


def test_fp8_per_tensor_adds_one_float32_scale() -> None:
    assert _bytes({"quant_method": "fp8", "activation_scheme": "static"}) == OUT * INP + 4


def test_fp8_blocks_add_one_float32_scale_per_block() -> None:
    # DeepSeek V3: weight_scale_inv is float32 [ceil(out/128), ceil(in/128)]
    quant = {"quant_method": "fp8", "weight_block_size": [128, 128], "fmt": "e4m3"}
    assert _bytes(quant) == OUT * INP + 2 * 4 * 4
    ragged = linear_bytes("m.up_proj.weight", 300, 200, _arch(quant), expert=False)
    assert ragged == 300 * 200 + 3 * 2 * 4  # partial blocks still carry a scale


def test_gptq_4bit_stores_packed_weights_zeros_and_group_scales() -> None:
    quant = {"quant_method": "gptq", "bits": 4, "group_size": 128, "sym": True}
    groups = INP // 128
    qweight = (INP // 8) * OUT * 4  # int32 [in/8, out]
    qzeros = groups * (OUT // 8) * 4  # int32 [groups, out/8], stored even when symmetric
    scales = groups * OUT * 2  # float16 [groups, out]
    assert _bytes(quant) == qweight + qzeros + scales


def test_gptq_group_size_minus_one_means_one_scale_per_output_row() -> None:
    quant = {"quant_method": "gptq", "bits": 4, "group_size": -1}
    assert _bytes(quant) == (INP // 8) * OUT * 4 + (OUT // 8) * 4 + OUT * 2


def _compressed(weights: dict[str, Any], **extra: Any) -> dict[str, Any]:
    groups = {"group_0": {"targets": ["Linear"], "weights": weights}}
    return {"quant_method": "compressed-tensors", "config_groups": groups, **extra}


def test_compressed_tensors_symmetric_int4_has_no_zero_points() -> None:
    quant = _compressed({"num_bits": 4, "type": "int", "symmetric": True, "group_size": 128})
    assert _bytes(quant) == OUT * INP // 2 + OUT * (INP // 128) * 2


def test_compressed_tensors_asymmetric_int4_stores_zero_points() -> None:
    quant = _compressed({"num_bits": 4, "type": "int", "symmetric": False, "group_size": 64})
    groups = INP // 64
    assert _bytes(quant) == OUT * INP // 2 + OUT * groups * 2 + OUT * groups // 2


def test_compressed_tensors_fp8_stores_a_scale_per_output_channel() -> None:
    quant = _compressed({"num_bits": 8, "type": "float", "strategy": "channel"})
    assert _bytes(quant) == OUT * INP + OUT * 2


def test_a_quantization_config_without_weight_bits_leaves_weights_unquantized() -> None:
    assert _bytes(_compressed({})) == OUT * INP * 2
    assert _bytes({"quant_method": "compressed-tensors", "config_groups": []}) == OUT * INP * 2
    assert _bytes({"quant_method": "bitsandbytes"}) == OUT * INP * 2


def test_embeddings_norms_and_the_router_are_never_quantized() -> None:
    quant = {"quant_method": "fp8"}
    for name in ("model.embed_tokens.weight", "lm_head.weight", "model.layers.0.mlp.gate.weight"):
        assert _bytes(quant, name) == OUT * INP * 2, name


def test_layers_the_config_ignores_stay_unquantized() -> None:
    quant = _compressed(
        {"num_bits": 8, "type": "float"}, ignore=["re:.*self_attn\\.o_proj$", "mlp.down_proj"]
    )
    assert _bytes(quant, "model.layers.3.self_attn.o_proj.weight") == OUT * INP * 2
    assert _bytes(quant, "model.layers.3.mlp.down_proj.weight") == OUT * INP * 2
    assert _bytes(quant, "model.layers.3.self_attn.q_proj.weight") == OUT * INP + OUT * 2


def test_modules_to_not_convert_is_read_like_ignore() -> None:
    quant = {"quant_method": "awq", "bits": 4, "group_size": 128, "modules_to_not_convert": ["o_"]}
    assert _bytes(quant, "model.layers.0.self_attn.o_proj.weight") == OUT * INP * 2
    assert _bytes(quant, "model.layers.0.self_attn.q_proj.weight") < OUT * INP // 2 + OUT * INP // 8


def test_mxfp4_packs_expert_weights_only() -> None:
    arch = _arch({"quant_method": "mxfp4"})
    name = "model.layers.0.mlp.experts.up_proj.weight"
    # gpt-oss: uint8 blocks of two 4-bit values, one uint8 scale per 32 values
    assert linear_bytes(name, OUT, INP, arch, expert=True) == OUT * INP // 2 + OUT * INP // 32
    assert linear_bytes(name, OUT, INP, arch, expert=False) == OUT * INP * 2


def test_tied_embeddings_have_no_separate_lm_head() -> None:
    assert "lm_head.weight" in _sizes(_arch())
    assert "lm_head.weight" not in _sizes(_arch(tie_word_embeddings=True))


def test_qwen2_attention_has_q_k_v_biases() -> None:
    sizes = _sizes(_arch(architectures=["Qwen2ForCausalLM"]))
    hd = LLAMA["hidden_size"] // LLAMA["num_attention_heads"]
    assert sizes["model.layers.1.self_attn.q_proj.bias"] == LLAMA["num_attention_heads"] * hd * 2
    assert sizes["model.layers.1.self_attn.k_proj.bias"] == LLAMA["num_key_value_heads"] * hd * 2
    assert "model.layers.0.self_attn.o_proj.bias" not in sizes


def test_a_vision_tower_is_one_estimated_tensor() -> None:
    vision = {"hidden_size": 32, "num_hidden_layers": 2, "intermediate_size": 64}
    config = {
        "architectures": ["Llama4ForConditionalGeneration"],
        "text_config": {**LLAMA, "num_local_experts": 2, "intermediate_size_mlp": 128},
        "vision_config": vision,
    }
    sizes = _sizes(parse(config))
    patches = 3 * 14 * 14 * 32  # RGB 14 x 14 patches (the defaults) embedded in 32
    params = 2 * (4 * 32 * 32 + 2 * 32 * 64) + patches + 32 * LLAMA["hidden_size"]
    assert sizes["vision_model.estimated.weight"] == params * 2


def test_mla_without_a_query_lora_has_one_query_projection() -> None:
    # DeepSeek V2 Lite: q_lora_rank is null, so the query is one dense projection
    arch = parse({**DEEPSEEK, "q_lora_rank": None})
    sizes = _sizes(arch)
    q_out = DEEPSEEK["num_attention_heads"] * (
        DEEPSEEK["qk_nope_head_dim"] + DEEPSEEK["qk_rope_head_dim"]
    )
    assert sizes["model.layers.0.self_attn.q_proj.weight"] == q_out * DEEPSEEK["hidden_size"] * 2
    assert "model.layers.0.self_attn.q_a_proj.weight" not in sizes


def test_moe_without_shared_experts_holds_only_routed_experts() -> None:
    mixtral = {
        **LLAMA,
        "architectures": ["MixtralForCausalLM"],
        "num_local_experts": 4,
        "intermediate_size": 32,
    }
    sizes = _sizes(parse(mixtral))
    assert not any("shared_experts" in name for name in sizes)
    per_expert = 32 * LLAMA["hidden_size"] * 2
    assert sizes["model.layers.0.mlp.experts.up_proj.weight"] == 4 * per_expert
    assert sizes["model.layers.0.mlp.gate.weight"] == 4 * LLAMA["hidden_size"] * 2


def test_fp8_deepseek_quantizes_experts_in_blocks_but_not_the_router() -> None:
    fp8 = {"quant_method": "fp8", "weight_block_size": [16, 16]}
    sizes = _sizes(parse({**DEEPSEEK, "quantization_config": fp8}))
    h, experts, inter = DEEPSEEK["hidden_size"], DEEPSEEK["n_routed_experts"], 32
    blocks = math.ceil(inter / 16) * math.ceil(h / 16)
    assert sizes["model.layers.1.mlp.experts.up_proj.weight"] == experts * (inter * h + blocks * 4)
    assert sizes["model.layers.1.mlp.gate.weight"] == experts * h * 2
    assert sizes["model.layers.1.input_layernorm.weight"] == h * 2
