"""KV cache bytes per token per GPU, layer kind by layer kind.

* GQA / MHA: 2 (K and V) x KV heads on this GPU x head dim x dtype; KV heads are split
  over TP and a GPU always holds at least one;
* MLA: one latent of ``kv_lora_rank + qk_rope_head_dim`` per token, not split by TP
  (every GPU keeps the whole latent);
* sliding-window layers hold at most the window, so they cost a fixed amount per
  request rather than per token; linear-attention layers hold a recurrent state
  per request.
"""

from __future__ import annotations

import math

from servekit.fit.arch import Architecture
from servekit.fit.models import FitOptions, KvCost, KvDtype

SLIDING = "sliding_attention"
LINEAR = "linear_attention"


def _dtype_bytes(arch: Architecture, dtype: KvDtype) -> int:
    match dtype:
        case KvDtype.FP8:
            return 1
        case KvDtype.AUTO:  # pragma: no branch
            return arch.dtype_bytes


def _per_layer(arch: Architecture, tp: int, width: int) -> int:
    if arch.is_mla:
        return (arch.kv_lora_rank + arch.qk_rope) * width
    return 2 * math.ceil(arch.kv_heads / tp) * arch.head_dim * width


def _kinds(arch: Architecture, layers: int) -> list[str]:
    if arch.layer_types:
        return list(arch.layer_types[:layers])
    return ["full_attention"] * layers


def cost(arch: Architecture, options: FitOptions, max_len: int) -> KvCost:
    """Bytes per token per GPU, and the fixed bytes per request, on the busiest stage."""
    layout = options.parallelism
    layers = math.ceil(arch.layers / layout.pp)
    per_layer = _per_layer(arch, layout.tp, _dtype_bytes(arch, options.kv_cache_dtype))
    kinds = _kinds(arch, layers)
    full = sum(1 for k in kinds if k not in (SLIDING, LINEAR))
    sliding = kinds.count(SLIDING)
    linear = kinds.count(LINEAR)
    window = min(arch.sliding_window or max_len, max_len)
    per_request = sliding * window * per_layer + linear * arch.linear_state_bytes // layout.tp
    notes = []
    if arch.is_mla:
        notes.append(
            f"MLA: each token keeps one {arch.kv_lora_rank + arch.qk_rope}-wide latent per layer, "
            "on every GPU (not split by tensor parallelism)"
        )
    elif arch.kv_heads < layout.tp:
        notes.append(
            f"{arch.kv_heads} KV heads over TP {layout.tp}: each GPU keeps a whole KV head, "
            "so KV is replicated"
        )
    if sliding:
        notes.append(f"{sliding} sliding-window layers keep at most {window} tokens per request")
    if linear:
        notes.append(f"{linear} linear-attention layers keep a fixed state per request")
    return KvCost(
        bytes_per_token_per_gpu=full * per_layer,
        bytes_per_request_per_gpu=per_request,
        notes=tuple(notes),
    )
