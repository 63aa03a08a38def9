"""The architecture of a model, read from its ``config.json``.

Multimodal wrappers keep the language model's fields in ``text_config`` (Llama 4,
Kimi-VL, Kimi K2.5, Gemma 3, Qwen3-VL) or at the top level (Qwen2.5-VL), and the vision
tower's in ``vision_config``; ``quantization_config`` may sit at either level. A wrapper
servekit does not list by name is sized from its ``text_config`` when that names a known
language model (``model_type``). Fields a model's config leaves to its transformers
defaults (Gemma 3's ``text_config`` omits its vocabulary and head counts) are filled
from those defaults. Only the fields a fit needs are read; a missing one is an
:class:`ArchitectureError` that names it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from servekit.errors import ArchitectureError
from servekit.seams import ReadFailure, read_utf8

# architecture name -> family; the family decides which fields are needed
FAMILIES: dict[str, str] = {
    "LlamaForCausalLM": "dense",
    "MistralForCausalLM": "dense",
    "Qwen2ForCausalLM": "dense",
    "Qwen3ForCausalLM": "dense",
    "Gemma2ForCausalLM": "dense",
    "Gemma3ForCausalLM": "dense",
    "Phi3ForCausalLM": "dense",
    "GraniteForCausalLM": "dense",
    "MixtralForCausalLM": "moe",
    "Qwen2MoeForCausalLM": "moe",
    "Qwen3MoeForCausalLM": "moe",
    "Llama4ForConditionalGeneration": "moe",
    "Llama4ForCausalLM": "moe",
    "GptOssForCausalLM": "moe",
    "DeepseekV2ForCausalLM": "mla",
    "DeepseekV3ForCausalLM": "mla",
    "KimiVLForConditionalGeneration": "mla",
    "KimiK25ForConditionalGeneration": "mla",
    "Qwen2VLForConditionalGeneration": "dense",
    "Qwen2_5_VLForConditionalGeneration": "dense",
    "Qwen3VLForConditionalGeneration": "dense",
    "Qwen3VLMoeForConditionalGeneration": "moe",
    "Gemma3ForConditionalGeneration": "dense",
    "Mistral3ForConditionalGeneration": "dense",
}

# text_config.model_type -> family: how a wrapper not listed above is sized
TEXT_FAMILIES: dict[str, str] = {
    "llama": "dense",
    "mistral": "dense",
    "qwen2": "dense",
    "qwen3": "dense",
    "gemma2": "dense",
    "gemma3_text": "dense",
    "qwen2_vl_text": "dense",
    "qwen2_5_vl_text": "dense",
    "qwen3_vl_text": "dense",
    "mixtral": "moe",
    "qwen2_moe": "moe",
    "qwen3_moe": "moe",
    "qwen3_vl_moe_text": "moe",
    "llama4_text": "moe",
    "deepseek_v2": "mla",
    "deepseek_v3": "mla",
    "kimi_k2": "mla",
}

# transformers' defaults for fields real configs leave out (Gemma3TextConfig's __init__)
TEXT_DEFAULTS: dict[str, dict[str, Any]] = {
    "gemma3_text": {
        "vocab_size": 262208,
        "num_attention_heads": 8,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "max_position_embeddings": 131072,
        "sliding_window": 4096,
        "sliding_window_pattern": 6,
        "tie_word_embeddings": True,
    },
}

# vLLM's --dtype auto loads a float32 checkpoint in 16 bits, so every dtype here is 2 bytes
_DTYPE_BYTES = {"float32": 2, "float16": 2, "bfloat16": 2, "float": 2, "half": 2}

# Architectures whose vLLM model asks for its rotary cache in float32 (gpt_oss.py: get_rope(...,
# dtype=torch.float32)); every other one gets the model's dtype.
_ROPE_FLOAT32 = frozenset({"GptOssForCausalLM"})
# Rope types whose cache covers original_max_position_embeddings x factor positions (YaRN) or
# max_position_embeddings x factor (linear); every other type covers max_position_embeddings.
_ROPE_ORIGINAL_TIMES_FACTOR = frozenset({"yarn", "deepseek_yarn"})
_ROPE_MAX_TIMES_FACTOR = frozenset({"linear"})


def _first(cfg: dict[str, Any], *names: str) -> Any:
    for name in names:
        if cfg.get(name) is not None:
            return cfg[name]
    return None


@dataclass(frozen=True)
class Architecture:
    """What a fit needs to know about the language model."""

    name: str
    family: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    vocab: int
    intermediate: int
    dtype_bytes: int
    tie_embeddings: bool
    max_position: int
    experts: int = 0
    moe_intermediate: int = 0
    shared_intermediate: int = 0
    moe_layers: frozenset[int] = frozenset()
    kv_lora_rank: int = 0
    q_lora_rank: int = 0
    qk_nope: int = 0
    qk_rope: int = 0
    v_head_dim: int = 0
    attention_bias: bool = False
    sliding_window: int | None = None
    layer_types: tuple[str, ...] = ()
    linear_state_bytes: int = 0  # per layer per request, linear-attention layers
    quantization: dict[str, Any] = field(default_factory=dict)
    multimodal: bool = False
    vision_params: int = 0  # estimated from vision_config: encoder layers and projector
    # (positions, rotary dim, bytes per value) of each distinct rotary cos/sin cache
    rope_caches: tuple[tuple[int, int, int], ...] = ()

    @property
    def is_moe(self) -> bool:
        return self.experts > 0

    @property
    def is_mla(self) -> bool:
        return self.family == "mla"


def _unreadable(failure: ReadFailure) -> ArchitectureError:
    if failure.missing:
        hint = "pass a model directory that holds config.json"
        return ArchitectureError(f"{failure.path}: no config.json", hint=hint)
    return ArchitectureError(f"{failure.path}: not readable JSON: {failure.exc}")


def read_config(path: Path) -> dict[str, Any]:
    """``config.json`` as a dict, or an :class:`ArchitectureError` that says why not."""
    text = read_utf8(path, _unreadable)
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ArchitectureError(f"{path}: not readable JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ArchitectureError(f"{path}: config.json is not a JSON object")
    return data


def _need(cfg: dict[str, Any], name: str, *aliases: str, source: str) -> int:
    value = _first(cfg, name, *aliases)
    if not isinstance(value, int):
        raise ArchitectureError(
            f"{source}: the config has no {name!r}, which a fit needs",
            hint=f"pass a complete config.json (it must set {name})",
        )
    return value


def _architecture(cfg: dict[str, Any], text: dict[str, Any], source: str) -> tuple[str, str]:
    """(architecture name, family): the name's own family, or a wrapper's language model's."""
    names = cfg.get("architectures") or []
    if not names:
        raise ArchitectureError(
            f"{source}: the config names no architecture (no 'architectures' list)",
            hint="pass the model's own config.json, which lists its architecture",
        )
    name = str(names[0])
    if name in FAMILIES:
        return name, FAMILIES[name]
    kind = str(text.get("model_type") or "") if text is not cfg else ""
    if kind in TEXT_FAMILIES:
        return name, TEXT_FAMILIES[kind]
    wrapped = f" (its text_config's model_type is {kind!r})" if text is not cfg else ""
    raise ArchitectureError(
        f"{source}: architecture {name!r}{wrapped} is not one servekit fit knows",
        hint="known architectures: "
        + ", ".join(sorted(FAMILIES))
        + "; a multimodal wrapper is also sized when its text_config's model_type is one of "
        + ", ".join(sorted(TEXT_FAMILIES)),
    )


def _layer_types(text: dict[str, Any], layers: int) -> tuple[str, ...]:
    """Each layer's attention kind: ``layer_types``, or Gemma 3's pattern (every Nth layer
    full attention, the others a sliding window) when only the pattern is given."""
    if text.get("layer_types"):
        return tuple(str(t) for t in text["layer_types"])
    pattern = text.get("sliding_window_pattern")
    if isinstance(pattern, int) and pattern > 1 and isinstance(text.get("sliding_window"), int):
        kinds = ("sliding_attention", "full_attention")
        return tuple(kinds[(i + 1) % pattern == 0] for i in range(layers))
    return ()


def _text_config(cfg: dict[str, Any]) -> dict[str, Any]:
    """The language model's fields, with the defaults its config relies on filled in."""
    text = cfg.get("text_config")
    if not isinstance(text, dict):
        return cfg
    defaults = TEXT_DEFAULTS.get(str(text.get("model_type") or ""), {})
    return {**defaults, **text} if defaults else text


def _moe_layers(text: dict[str, Any], layers: int, name: str, family: str) -> frozenset[int]:
    if family == "mla":
        first_dense = int(text.get("first_k_dense_replace") or 0)
        step = int(text.get("moe_layer_freq") or 1)
        return frozenset(i for i in range(first_dense, layers) if i % step == 0)
    if name.startswith("Llama4"):
        step = int(text.get("interleave_moe_layer_step") or 1)
        return frozenset(i for i in range(layers) if (i + 1) % step == 0)
    dense = set(text.get("mlp_only_layers") or [])
    step = int(text.get("decoder_sparse_step") or 1)
    return frozenset(i for i in range(layers) if i not in dense and (i + 1) % step == 0)


def _experts(text: dict[str, Any]) -> int:
    return int(_first(text, "n_routed_experts", "num_local_experts", "num_experts") or 0)


def _linear_state(text: dict[str, Any]) -> int:
    """Bytes of one linear-attention layer's recurrent state per request (float32)."""
    heads = int(text.get("linear_num_value_heads") or 0)
    k_dim = int(text.get("linear_key_head_dim") or 0)
    v_dim = int(text.get("linear_value_head_dim") or 0)
    return heads * k_dim * v_dim * 4


def _vision_params(cfg: dict[str, Any], text_hidden: int) -> int:
    """A vision tower's parameters, estimated from ``vision_config`` (for a config-only fit;
    with safetensors headers the tower's own tensors are counted instead).

    Per encoder layer attention (4 h^2) and an MLP (2 h i, or 3 h i when gated: SiLU, as
    Qwen2.5-VL's); the patch embedding and a learned position table; then the projector
    into the language model: a patch merger over ``merge`` patches (h m)^2 + h m x out
    (Qwen-VL, Kimi K2.5), Llama 4's pixel-shuffle adapter, or one linear map (Gemma 3).
    Field names differ by model (``depth``, ``vt_hidden_size``...); each is read by all
    of its names.
    """
    vision = cfg.get("vision_config")
    if not isinstance(vision, dict):
        return 0
    hidden = int(_first(vision, "hidden_size", "vt_hidden_size", "embed_dim", "width") or 0)
    layers = int(_first(vision, "num_hidden_layers", "vt_num_hidden_layers", "depth") or 0)
    inter = int(_first(vision, "intermediate_size", "vt_intermediate_size") or 4 * hidden)
    gated = str(vision.get("hidden_act") or "") == "silu"
    encoder = layers * (4 * hidden * hidden + (3 if gated else 2) * hidden * inter)
    return encoder + _vision_embeddings(vision, hidden) + _projector(vision, hidden, text_hidden)


def _vision_embeddings(vision: dict[str, Any], hidden: int) -> int:
    patch = int(_first(vision, "patch_size") or 14)
    channels = int(_first(vision, "in_channels", "in_chans", "num_channels") or 3)
    frames = int(_first(vision, "temporal_patch_size") or 1)
    side = int(_first(vision, "image_size") or 0) // patch
    table = int(_first(vision, "init_pos_emb_height") or side) * int(
        _first(vision, "init_pos_emb_width") or side
    )
    return channels * patch * patch * frames * hidden + table * hidden


def _projector(vision: dict[str, Any], hidden: int, text_hidden: int) -> int:
    kernel = vision.get("merge_kernel_size")
    merge = int(kernel[0]) * int(kernel[1]) if isinstance(kernel, list) and len(kernel) == 2 else 0
    merge = merge or int(_first(vision, "spatial_merge_size") or 1) ** 2
    out = int(_first(vision, "out_hidden_size", "text_hidden_size") or text_hidden)
    if merge > 1:
        return (hidden * merge) ** 2 + hidden * merge * out
    adapter_in = int(_first(vision, "projector_input_dim") or 0)
    if adapter_in:  # Llama 4: pixel shuffle (4 patches in one) into an MLP, then a linear map
        adapter_out = int(_first(vision, "projector_output_dim") or adapter_in)
        final = int(_first(vision, "vision_output_dim") or adapter_out)
        return hidden * 4 * adapter_in + adapter_in * adapter_out + final * text_hidden
    return hidden * text_hidden


def _rope_variants(text: dict[str, Any]) -> list[dict[str, Any]]:
    """Each distinct rope configuration the layers use (per layer type in transformers 5)."""
    params = text.get("rope_parameters") or text.get("rope_scaling") or {}
    if not isinstance(params, dict):
        return [{}]
    used = set(text.get("layer_types") or params)
    nested = [v for k, v in params.items() if isinstance(v, dict) and k in used]
    if nested:  # {"full_attention": {...}, "sliding_attention": {...}}: the layers' types
        return [dict(t) for t in {tuple(sorted(v.items(), key=str)) for v in nested}]
    variants = [params]
    if text.get("rope_local_base_freq"):  # Gemma 3's local layers (transformers 4 configs)
        variants.append({"rope_type": "default", "rope_theta": text["rope_local_base_freq"]})
    return variants


def _rope_caches(
    text: dict[str, Any], name: str, head_dim: int, dtype_bytes: int
) -> tuple[tuple[int, int, int], ...]:
    """The rotary caches vLLM builds (``vllm/model_executor/layers/rotary_embedding``).

    One cos/sin table per distinct rope configuration, shared by every layer that uses it:
    positions x rotary dim values, in the model's dtype.
    """
    max_pos = int(_first(text, "max_position_embeddings") or 4096)
    mla_rope = int(text.get("qk_rope_head_dim") or 0)
    out = []
    for params in _rope_variants(text):
        kind = str(params.get("rope_type") or params.get("type") or "default")
        factor = float(params.get("factor") or 1.0)
        positions = max_pos
        if kind in _ROPE_ORIGINAL_TIMES_FACTOR:
            positions = int(int(params.get("original_max_position_embeddings") or max_pos) * factor)
        elif kind in _ROPE_MAX_TIMES_FACTOR:
            positions = int(max_pos * factor)
        partial = float(
            params.get("partial_rotary_factor") or text.get("partial_rotary_factor") or 1.0
        )
        dim = mla_rope or int(head_dim * partial)
        out.append((positions, dim, 4 if name in _ROPE_FLOAT32 else dtype_bytes))
    return tuple(out)


def parse(cfg: dict[str, Any], *, source: str = "config.json") -> Architecture:
    """Read the language model's architecture from a parsed ``config.json``."""
    text = _text_config(cfg)
    name, family = _architecture(cfg, text, source)
    hidden = _need(text, "hidden_size", source=source)
    layers = _need(text, "num_hidden_layers", source=source)
    heads = _need(text, "num_attention_heads", source=source)
    vocab = _need(text, "vocab_size", source=source)
    kv_heads = int(_first(text, "num_key_value_heads") or heads)
    head_dim = int(_first(text, "head_dim") or hidden // heads)
    experts = _experts(text)
    if family in ("moe",) and not experts:
        _need(text, "num_local_experts", "n_routed_experts", "num_experts", source=source)
    intermediate = int(_first(text, "intermediate_size", "intermediate_size_mlp") or 0)
    if family == "dense" and not intermediate:
        _need(text, "intermediate_size", source=source)
    moe_inter = int(_first(text, "moe_intermediate_size", "intermediate_size") or 0)
    if name.startswith("Llama4"):
        intermediate = int(text.get("intermediate_size_mlp") or intermediate)
        moe_inter = int(text.get("intermediate_size") or moe_inter)
    shared = int(text.get("shared_expert_intermediate_size") or 0)
    if not shared and text.get("n_shared_experts"):
        shared = int(text["n_shared_experts"]) * moe_inter
    if name.startswith("Llama4"):
        shared = moe_inter
    mla = family == "mla"
    if mla:
        for field_name in ("kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"):
            _need(text, field_name, source=source)
    quant = cfg.get("quantization_config") or text.get("quantization_config") or {}
    dtype = str(_first(text, "torch_dtype", "dtype") or _first(cfg, "torch_dtype", "dtype") or "")
    dtype_bytes = _DTYPE_BYTES.get(dtype, 2)
    return Architecture(
        name=name,
        family=family,
        hidden=hidden,
        layers=layers,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=head_dim,
        vocab=vocab,
        intermediate=intermediate,
        dtype_bytes=dtype_bytes,
        tie_embeddings=bool(_first(text, "tie_word_embeddings") or cfg.get("tie_word_embeddings")),
        max_position=int(_first(text, "max_position_embeddings") or 4096),
        experts=experts,
        moe_intermediate=moe_inter if experts else 0,
        shared_intermediate=shared if experts else 0,
        moe_layers=_moe_layers(text, layers, name, family) if experts else frozenset(),
        kv_lora_rank=int(text.get("kv_lora_rank") or 0),
        q_lora_rank=int(text.get("q_lora_rank") or 0),
        qk_nope=int(text.get("qk_nope_head_dim") or 0),
        qk_rope=int(text.get("qk_rope_head_dim") or 0),
        v_head_dim=int(text.get("v_head_dim") or 0),
        attention_bias=bool(text.get("attention_bias")) or name.startswith("Qwen2"),
        sliding_window=text.get("sliding_window")
        if isinstance(text.get("sliding_window"), int)
        else None,
        layer_types=_layer_types(text, layers),
        linear_state_bytes=_linear_state(text),
        quantization=dict(quant) if isinstance(quant, dict) else {},
        multimodal=text is not cfg or isinstance(cfg.get("vision_config"), dict),
        vision_params=_vision_params(cfg, hidden),
        rope_caches=_rope_caches(text, name, head_dim, dtype_bytes),
    )
