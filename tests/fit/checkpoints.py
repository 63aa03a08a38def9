"""Tiny checkpoints written by the real ``safetensors`` library, named as Hugging Face names them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import save_file

Shapes = dict[str, tuple[int, ...]]

LLAMA: dict[str, Any] = {
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "vocab_size": 1000,  # not a multiple of 64: vLLM pads it to 1024
    "max_position_embeddings": 2048,
    "tie_word_embeddings": False,
    "torch_dtype": "float16",
}

DEEPSEEK: dict[str, Any] = {
    "architectures": ["DeepseekV3ForCausalLM"],
    "hidden_size": 64,
    "intermediate_size": 128,
    "moe_intermediate_size": 32,
    "num_hidden_layers": 2,
    "num_nextn_predict_layers": 1,
    "num_attention_heads": 8,
    "num_key_value_heads": 8,
    "vocab_size": 1024,
    "n_routed_experts": 4,
    "n_shared_experts": 1,
    "first_k_dense_replace": 1,
    "q_lora_rank": 32,
    "kv_lora_rank": 16,
    "qk_nope_head_dim": 8,
    "qk_rope_head_dim": 4,
    "v_head_dim": 8,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": False,
    "torch_dtype": "float16",
}


def _mlp(p: str, inter: int, hidden: int) -> Shapes:
    return {
        f"{p}.gate_proj.weight": (inter, hidden),
        f"{p}.up_proj.weight": (inter, hidden),
        f"{p}.down_proj.weight": (hidden, inter),
    }


def llama_shapes(cfg: dict[str, Any]) -> Shapes:
    h, layers = cfg["hidden_size"], cfg["num_hidden_layers"]
    hd = h // cfg["num_attention_heads"]
    q, kv = cfg["num_attention_heads"] * hd, cfg["num_key_value_heads"] * hd
    out: Shapes = {
        "model.embed_tokens.weight": (cfg["vocab_size"], h),
        "model.norm.weight": (h,),
        "lm_head.weight": (cfg["vocab_size"], h),
    }
    for i in range(layers):
        p = f"model.layers.{i}"
        out |= {
            f"{p}.self_attn.q_proj.weight": (q, h),
            f"{p}.self_attn.k_proj.weight": (kv, h),
            f"{p}.self_attn.v_proj.weight": (kv, h),
            f"{p}.self_attn.o_proj.weight": (h, q),
            f"{p}.input_layernorm.weight": (h,),
            f"{p}.post_attention_layernorm.weight": (h,),
        }
        out |= _mlp(f"{p}.mlp", cfg["intermediate_size"], h)
    return out


def deepseek_shapes(cfg: dict[str, Any]) -> Shapes:
    """DeepSeek V3 naming, with the MTP layer (index num_hidden_layers) vLLM does not load."""
    h, heads = cfg["hidden_size"], cfg["num_attention_heads"]
    nope, rope, v = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    out: Shapes = {
        "model.embed_tokens.weight": (cfg["vocab_size"], h),
        "model.norm.weight": (h,),
        "lm_head.weight": (cfg["vocab_size"], h),
    }
    for i in range(cfg["num_hidden_layers"] + 1):
        p = f"model.layers.{i}"
        a = f"{p}.self_attn"
        out |= {
            f"{a}.q_a_proj.weight": (cfg["q_lora_rank"], h),
            f"{a}.q_a_layernorm.weight": (cfg["q_lora_rank"],),
            f"{a}.q_b_proj.weight": (heads * (nope + rope), cfg["q_lora_rank"]),
            f"{a}.kv_a_proj_with_mqa.weight": (cfg["kv_lora_rank"] + rope, h),
            f"{a}.kv_a_layernorm.weight": (cfg["kv_lora_rank"],),
            f"{a}.kv_b_proj.weight": (heads * (nope + v), cfg["kv_lora_rank"]),
            f"{a}.o_proj.weight": (h, heads * v),
            f"{p}.input_layernorm.weight": (h,),
            f"{p}.post_attention_layernorm.weight": (h,),
        }
        if i < cfg["first_k_dense_replace"]:
            out |= _mlp(f"{p}.mlp", cfg["intermediate_size"], h)
            continue
        out[f"{p}.mlp.gate.weight"] = (cfg["n_routed_experts"], h)
        for e in range(cfg["n_routed_experts"]):
            out |= _mlp(f"{p}.mlp.experts.{e}", cfg["moe_intermediate_size"], h)
        out |= _mlp(f"{p}.mlp.shared_experts", cfg["moe_intermediate_size"], h)
    return out


def nbytes(shapes: Shapes, width: int = 2) -> int:
    return sum(int(np.prod(s)) * width for s in shapes.values())


def write_model(
    root: Path, config: dict[str, Any], shapes: Shapes, *, shards: int = 1, dtype: str = "float16"
) -> Path:
    """``config.json`` and ``shards`` safetensors files (with an index when sharded)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "config.json").write_text(json.dumps(config))
    names = sorted(shapes)
    weight_map = {}
    for k in range(shards):
        part = names[k::shards]
        fname = (
            "model.safetensors" if shards == 1 else f"model-{k + 1:05d}-of-{shards:05d}.safetensors"
        )
        save_file({n: np.zeros(shapes[n], dtype=dtype) for n in part}, str(root / fname))
        weight_map |= dict.fromkeys(part, fname)
    if shards > 1:
        index = {"metadata": {}, "weight_map": weight_map}
        (root / "model.safetensors.index.json").write_text(json.dumps(index))
    return root
