"""Weight bytes per GPU under vLLM's sharding rules, tensor class by tensor class.

Each tensor is classed by its name (docs/fit.md lists the rules):

* tensor-parallel projections (Q, O, MLP, MLA up-projections) are split over TP;
* K/V projections are split over the KV heads, and replicated once TP exceeds them;
* norms, MoE routers and MLA down-projections (``q_a_proj``, ``kv_a_proj_with_mqa``)
  are replicated on every GPU;
* embeddings and the LM head are vocab-parallel: rows padded to 64, split over TP;
* routed experts are split over TP, or over TP x DP with expert parallelism;
* shared experts are split over TP; a vision tower too, unless language-only;
* layers past ``num_hidden_layers`` (MTP / next-n heads) are not loaded.

Beside the checkpoint's tensors vLLM makes some of its own while loading, inside its
"Model loading took" figure (:func:`engine_made`): MLA's absorbed copies of ``kv_b_proj``
and the rotary cos/sin tables.

Unquantized floating tensors are counted at the model's dtype (vLLM casts them
on load); quantized tensors and their scales keep their stored bytes.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from collections.abc import Sequence

from servekit.fit.arch import Architecture
from servekit.fit.models import ClassBytes, Parallelism, Tensor, TensorClass

VOCAB_PAD = 64  # vLLM's DEFAULT_VOCAB_PADDING_SIZE
FLOATS = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2}

_LAYER = re.compile(r"layers\.(\d+)\.")
_VISION = re.compile(
    r"(vision_tower|vision_model|visual\.|multi_modal_projector|mm_projector|vision_encoder"
    r"|patch_embed|image_newline|vision_)"
)
_VOCAB = re.compile(r"(embed_tokens|lm_head|\bwte\b|word_embeddings|embed_in|embed_out)")
_ROUTER = re.compile(
    r"(\.gate\.(weight|bias)$|\.router\.|e_score_correction_bias|shared_expert_gate)"
)
_MLA_DOWN = re.compile(r"(q_a_proj|kv_a_proj_with_mqa|q_a_layernorm|kv_a_layernorm)")
_KV = re.compile(r"\.(k_proj|v_proj)\.")
_FUSED_QKV = re.compile(r"(qkv_proj|query_key_value|Wqkv|c_attn)")
_ROW_BIAS = re.compile(r"(o_proj|down_proj|dense|out_proj|fc2|w2)\.bias$")
_SCALE = re.compile(r"(scale|_zero|zeros|g_idx|e_score_correction_bias)")


def layer_of(name: str) -> int | None:
    match = _LAYER.search(name)
    return int(match.group(1)) if match else None


def classify(name: str, arch: Architecture, *, language_only: bool) -> TensorClass:
    """The tensor class of ``name`` (first match wins)."""
    layer = layer_of(name)
    if _VISION.search(name):
        return TensorClass.NOT_LOADED if language_only else TensorClass.VISION
    if "mtp" in name or "rotary_emb" in name or (layer is not None and layer >= arch.layers):
        return TensorClass.NOT_LOADED
    if _VOCAB.search(name):
        return TensorClass.VOCAB
    parts = name.split(".")
    module = parts[-2] if len(parts) > 1 else parts[0]
    if _ROUTER.search(name) or _MLA_DOWN.search(name) or "norm" in module:
        return TensorClass.REPLICATED
    if "shared_expert" in name:
        return TensorClass.SHARED_EXPERT
    if ".experts." in name or module == "experts":
        return TensorClass.ROUTED_EXPERT
    if _KV.search(name):
        return TensorClass.KV_PROJ
    if _ROW_BIAS.search(name):
        return TensorClass.REPLICATED
    return TensorClass.TP_SPLIT


def stored_bytes(tensor: Tensor, arch: Architecture) -> int:
    """Bytes on the GPU before sharding: floating weights at the model dtype."""
    width = FLOATS.get(tensor.dtype)
    if width is None or _SCALE.search(tensor.name) or width == arch.dtype_bytes:
        return tensor.nbytes
    return tensor.nbytes * arch.dtype_bytes // width


def _kv_share(arch: Architecture, tp: int) -> float:
    """Fraction of the K/V projections one GPU holds."""
    return math.ceil(arch.kv_heads / tp) / arch.kv_heads


def _vocab_share(tensor: Tensor, arch: Architecture, tp: int) -> float:
    rows = tensor.shape[0] if tensor.shape else arch.vocab
    padded = math.ceil(rows / VOCAB_PAD) * VOCAB_PAD
    return math.ceil(padded / tp) / rows


def _expert_share(arch: Architecture, layout: Parallelism) -> float:
    if not layout.ep:
        return 1 / layout.tp
    return math.ceil(arch.experts / layout.expert_split) / arch.experts


def share(cls: TensorClass, tensor: Tensor, arch: Architecture, layout: Parallelism) -> float:
    """The fraction of ``tensor`` the busiest GPU holds."""
    tp = layout.tp
    match cls:
        case TensorClass.TP_SPLIT | TensorClass.SHARED_EXPERT | TensorClass.VISION:
            if _FUSED_QKV.search(tensor.name):
                q = arch.heads / (arch.heads + 2 * arch.kv_heads)
                return q / tp + (1 - q) * _kv_share(arch, tp)
            return 1 / tp
        case TensorClass.KV_PROJ:
            return _kv_share(arch, tp)
        case TensorClass.VOCAB:
            return _vocab_share(tensor, arch, tp)
        case TensorClass.ROUTED_EXPERT:
            return _expert_share(arch, layout)
        case TensorClass.REPLICATED:
            return 1.0
        case (
            TensorClass.NOT_LOADED | TensorClass.ENGINE_COPY | TensorClass.ROPE_CACHE
        ):  # pragma: no branch
            return 0.0


def _stage(name: str, cls: TensorClass, arch: Architecture, pp: int) -> set[int]:
    """The pipeline stages that hold ``name``: its layer's, or the first/last stage."""
    layer = layer_of(name)
    if cls is TensorClass.VISION:
        return {0}
    if layer is not None:
        return {min(pp - 1, layer * pp // arch.layers)}
    if cls is TensorClass.VOCAB and ("lm_head" in name or "embed_out" in name):
        return {pp - 1}
    if "norm" in name and cls is TensorClass.REPLICATED:
        return {pp - 1}
    return {0}


def mla_absorbed(arch: Architecture, layout: Parallelism) -> int:
    """Bytes per GPU vLLM's MLA backends add after loading: W_UK_T and W_UV, unquantized.

    They are ``kv_b_proj`` dequantized and split per head, kept beside it.
    """
    if not arch.is_mla:
        return 0
    heads = math.ceil(arch.heads / layout.tp)
    per_layer = heads * (arch.qk_nope + arch.v_head_dim) * arch.kv_lora_rank * arch.dtype_bytes
    return per_layer * math.ceil(arch.layers / layout.pp)


def rope_cache(arch: Architecture) -> int:
    """Bytes of the rotary cos/sin tables vLLM builds while it loads the model, on every GPU.

    One table per distinct rope configuration (positions x rotary dim, in the model's dtype;
    YaRN covers the original context x factor): a buffer, never in the checkpoint, but
    inside vLLM's "Model loading took" figure. vLLM sizes it from the config's
    ``max_position_embeddings``, not from ``--max-model-len``.
    """
    return sum(positions * dim * width for positions, dim, width in arch.rope_caches)


def engine_made(arch: Architecture, layout: Parallelism) -> tuple[ClassBytes, ...]:
    """What vLLM allocates beside the checkpoint's tensors while loading, per GPU."""
    made = (
        (TensorClass.ENGINE_COPY, mla_absorbed(arch, layout)),
        (TensorClass.ROPE_CACHE, rope_cache(arch)),
    )
    return tuple(
        ClassBytes(tensor_class=cls, tensors=0, bytes_per_gpu=size) for cls, size in made if size
    )


def per_gpu(
    tensors: Sequence[Tensor], arch: Architecture, layout: Parallelism, *, language_only: bool
) -> tuple[int, tuple[ClassBytes, ...]]:
    """(bytes on the busiest GPU, bytes per class on it)."""
    stages: dict[int, dict[TensorClass, float]] = defaultdict(lambda: defaultdict(float))
    counts: dict[TensorClass, int] = defaultdict(int)
    for tensor in tensors:
        cls = classify(tensor.name, arch, language_only=language_only)
        counts[cls] += 1
        size = stored_bytes(tensor, arch) * share(cls, tensor, arch, layout)
        for stage in _stage(tensor.name, cls, arch, layout.pp):
            stages[stage][cls] += size
    busiest = max(stages.values(), key=lambda s: sum(s.values())) if stages else {}
    by_class = tuple(
        ClassBytes(tensor_class=cls, tensors=counts[cls], bytes_per_gpu=round(busiest.get(cls, 0)))
        for cls in TensorClass
        if counts[cls]
    )
    return sum(c.bytes_per_gpu for c in by_class), by_class
