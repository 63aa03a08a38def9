"""Tensors estimated from ``config.json`` alone, when no safetensors header is at hand.

The estimate writes down the tensors a checkpoint of this architecture holds, with the
names the sharding rules read (:mod:`servekit.fit.weights`) and the bytes its
quantization config implies: FP8 (per tensor, per channel or in blocks with float32
scales), packed 4-bit integers with group scales (GPTQ, AWQ, compressed-tensors) and
MXFP4 (4-bit values plus one byte of scale per 32). The basis is weaker than the
headers: a checkpoint's own choices (unquantized layers, scale dtypes, padding) are
guessed from the config, and anything the config does not describe is missed.
"""

from __future__ import annotations

import math
import re
from typing import Any

from servekit.fit.arch import Architecture
from servekit.fit.models import Tensor

ALWAYS_UNQUANTIZED = re.compile(r"(embed_tokens|lm_head|norm|\.gate\.weight|router)")


def _excluded(name: str, quant: dict[str, Any]) -> bool:
    skip = quant.get("ignore") or quant.get("modules_to_not_convert") or []
    for entry in skip:
        entry = str(entry)
        if entry.startswith("re:"):
            if re.search(entry[3:], name.removesuffix(".weight")):
                return True
        elif entry in name:
            return True
    return False


def _scheme(quant: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """(method, weight scheme) of a quantization config."""
    method = str(quant.get("quant_method") or "")
    if method == "compressed-tensors":
        groups = quant.get("config_groups") or {}
        first: dict[str, Any] = next(iter(groups.values()), {}) if isinstance(groups, dict) else {}
        return method, dict(first.get("weights") or {})
    return method, quant


def _fp8(out: int, inp: int, quant: dict[str, Any]) -> int:
    block = quant.get("weight_block_size")
    if block:
        rows, cols = int(block[0]), int(block[1])
        return out * inp + math.ceil(out / rows) * math.ceil(inp / cols) * 4
    return out * inp + 4


def _int(out: int, inp: int, bits: int, group: int, zeros: bool) -> int:
    groups = math.ceil(inp / group) if group > 0 else 1
    size = out * inp * bits // 8 + out * groups * 2
    return size + (out * groups * bits // 8 if zeros else 0)


def linear_bytes(name: str, out: int, inp: int, arch: Architecture, *, expert: bool) -> int:
    """Stored bytes of one linear weight (with its scales) under the model's quantization."""
    quant = arch.quantization
    plain = out * inp * arch.dtype_bytes
    if not quant or ALWAYS_UNQUANTIZED.search(name) or _excluded(name, quant):
        return plain
    method, scheme = _scheme(quant)
    if method == "mxfp4":
        return out * inp // 2 + out * inp // 32 if expert else plain
    if method == "fp8":
        return _fp8(out, inp, quant)
    bits = int(scheme.get("num_bits") or scheme.get("bits") or 16)
    if method == "compressed-tensors" and scheme.get("type") == "float" and bits == 8:
        return out * inp + out * 2  # per-channel scales (tensor-wide scales are smaller)
    if bits < 16:
        group = int(scheme.get("group_size") or 128)
        zeros = method in ("gptq", "awq") or not scheme.get("symmetric", True)
        return _int(out, inp, bits, group, zeros)
    return plain


def _t(name: str, nbytes: int, *shape: int) -> Tensor:
    return Tensor(name=name, dtype="EST", shape=shape, nbytes=nbytes)


def _linear(prefix: str, out: int, inp: int, arch: Architecture, *, expert: bool = False) -> Tensor:
    name = f"{prefix}.weight"
    return _t(name, linear_bytes(name, out, inp, arch, expert=expert), out, inp)


def _norm(name: str, width: int, arch: Architecture) -> Tensor:
    return _t(f"{name}.weight", width * arch.dtype_bytes, width)


def _attention(p: str, arch: Architecture) -> list[Tensor]:
    h, a = arch.hidden, arch
    if a.is_mla:
        q_out = a.heads * (a.qk_nope + a.qk_rope)
        out = [
            _linear(f"{p}.kv_a_proj_with_mqa", a.kv_lora_rank + a.qk_rope, h, a),
            _norm(f"{p}.kv_a_layernorm", a.kv_lora_rank, a),
            _linear(f"{p}.kv_b_proj", a.heads * (a.qk_nope + a.v_head_dim), a.kv_lora_rank, a),
            _linear(f"{p}.o_proj", h, a.heads * a.v_head_dim, a),
        ]
        if a.q_lora_rank:
            out += [
                _linear(f"{p}.q_a_proj", a.q_lora_rank, h, a),
                _norm(f"{p}.q_a_layernorm", a.q_lora_rank, a),
                _linear(f"{p}.q_b_proj", q_out, a.q_lora_rank, a),
            ]
        else:
            out.append(_linear(f"{p}.q_proj", q_out, h, a))
        return out
    q, kv = a.heads * a.head_dim, a.kv_heads * a.head_dim
    out = [
        _linear(f"{p}.q_proj", q, h, a),
        _linear(f"{p}.k_proj", kv, h, a),
        _linear(f"{p}.v_proj", kv, h, a),
        _linear(f"{p}.o_proj", h, q, a),
    ]
    if a.attention_bias:
        out += [
            _t(f"{p}.{n}_proj.bias", w * a.dtype_bytes, w)
            for n, w in (("q", q), ("k", kv), ("v", kv))
        ]
    return out


def _mlp(p: str, inter: int, arch: Architecture, *, expert: bool = False) -> list[Tensor]:
    h = arch.hidden
    return [
        _linear(f"{p}.gate_proj", inter, h, arch, expert=expert),
        _linear(f"{p}.up_proj", inter, h, arch, expert=expert),
        _linear(f"{p}.down_proj", h, inter, arch, expert=expert),
    ]


def _moe(p: str, arch: Architecture) -> list[Tensor]:
    """A MoE block; each expert projection is one tensor holding every expert's bytes."""
    out = [_t(f"{p}.gate.weight", arch.experts * arch.hidden * arch.dtype_bytes, arch.experts)]
    for one in _mlp(f"{p}.experts", arch.moe_intermediate, arch, expert=True):
        out.append(one.model_copy(update={"nbytes": one.nbytes * arch.experts}))
    if arch.shared_intermediate:
        out += _mlp(f"{p}.shared_experts", arch.shared_intermediate, arch)
    return out


def tensors(arch: Architecture) -> list[Tensor]:
    """The tensors a checkpoint of ``arch`` holds, with estimated stored bytes."""
    h = arch.hidden
    out = [_linear("model.embed_tokens", arch.vocab, h, arch), _norm("model.norm", h, arch)]
    if not arch.tie_embeddings:
        out.append(_linear("lm_head", arch.vocab, h, arch))
    if arch.vision_params:
        out.append(_t("vision_model.estimated.weight", arch.vision_params * arch.dtype_bytes))
    for i in range(arch.layers):
        p = f"model.layers.{i}"
        out += _attention(f"{p}.self_attn", arch)
        out += [
            _norm(f"{p}.input_layernorm", h, arch),
            _norm(f"{p}.post_attention_layernorm", h, arch),
        ]
        if i in arch.moe_layers:
            out += _moe(f"{p}.mlp", arch)
        else:
            out += _mlp(f"{p}.mlp", arch.intermediate, arch)
    return out
