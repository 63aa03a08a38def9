"""The prediction: weights per GPU, the KV cache the rest leaves, and a verdict.

1. read the architecture from ``config.json`` and check the parallel layout against it;
2. count the weight bytes the busiest GPU holds (headers, or an estimate from the config);
3. subtract weights and the engine's own reserve from what the engine may use
   (usable memory x ``--gpu-memory-utilization``): the rest is the KV cache;
4. the verdict: the engine starts only if the KV cache holds one request of
   ``max_model_len`` tokens, as vLLM checks at startup; the margin is what is left.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from servekit.engines import vllm
from servekit.errors import ParallelLayoutError
from servekit.fit import arch as arch_mod
from servekit.fit import estimate, kv, weights
from servekit.fit.arch import Architecture
from servekit.fit.gpus import lookup
from servekit.fit.models import (
    GIB,
    Basis,
    FitOptions,
    FitResult,
    GpuSpec,
    KvCost,
    Tensor,
)

# The engine's own reserve per GPU besides weights and KV cache (vLLM's, measured: see
# servekit.engines.vllm.FIT and docs/fit.md).
OVERHEAD_SINGLE_GIB = vllm.FIT.overhead_single_gib
OVERHEAD_MULTI_GIB = vllm.FIT.overhead_multi_gib


@dataclass(frozen=True)
class ModelSource:
    """What a prediction reads: the config, and the headers' tensors when there are any."""

    name: str
    config: dict[str, Any]
    tensors: Sequence[Tensor] | None


def check_layout(arch: Architecture, options: FitOptions) -> None:
    """Refuse a layout vLLM would refuse, saying what to pass instead."""
    layout = options.parallelism
    if arch.heads % layout.tp:
        divisors = [d for d in range(1, arch.heads + 1) if arch.heads % d == 0 and d <= 64]
        raise ParallelLayoutError(
            f"tensor parallel {layout.tp} does not divide the {arch.heads} attention heads",
            hint="pass --tp as one of " + ", ".join(map(str, divisors)),
        )
    if layout.ep and not arch.is_moe:
        raise ParallelLayoutError(
            f"--ep (expert parallelism) needs a mixture-of-experts model; {arch.name} has no experts",
            hint="leave out --ep",
        )
    if layout.pp > arch.layers:
        raise ParallelLayoutError(
            f"pipeline parallel {layout.pp} exceeds the {arch.layers} layers",
            hint=f"pass --pp of at most {arch.layers}",
        )


def overhead_bytes(options: FitOptions) -> int:
    layout = options.parallelism
    multi = layout.tp * layout.pp * layout.dp > 1
    return int((OVERHEAD_MULTI_GIB if multi else OVERHEAD_SINGLE_GIB) * GIB)


def _gib(n: float) -> str:
    return f"{n / GIB:.2f} GiB"


@dataclass(frozen=True)
class _Budget:
    allowed: int
    kv_cache: int
    one_request: int
    max_tokens: int
    concurrency: float


def _budget(gpu: GpuSpec, options: FitOptions, used: int, cost: KvCost, max_len: int) -> _Budget:
    allowed = int(gpu.usable_gib * GIB * options.gpu_memory_utilization)
    kv_cache = allowed - used
    one = max_len * cost.bytes_per_token_per_gpu + cost.bytes_per_request_per_gpu
    room = max(kv_cache, 0)
    tokens = room // cost.bytes_per_token_per_gpu if cost.bytes_per_token_per_gpu else 0
    return _Budget(allowed, kv_cache, one, tokens, room / one if one else math.inf)


def _reasons(
    gpu: GpuSpec,
    options: FitOptions,
    basis: Basis,
    weights_bytes: int,
    b: _Budget,
    cost: KvCost,
    max_len: int,
) -> tuple[str, ...]:
    util = options.gpu_memory_utilization
    out = [
        f"the weights take {_gib(weights_bytes)} on each GPU; the engine may use "
        f"{_gib(b.allowed)} of the {gpu.usable_gib:.2f} GiB of each {gpu.name} "
        f"(--gpu-memory-utilization {util})"
    ]
    if weights_bytes > b.allowed:
        out.append(f"the weights alone do not fit: {_gib(weights_bytes - b.allowed)} short per GPU")
    elif b.kv_cache < b.one_request:
        out.append(
            f"after the weights and the engine's own reserve, {_gib(max(b.kv_cache, 0))} is left for "
            f"the KV cache, less than one request of {max_len} tokens needs ({_gib(b.one_request)}): "
            "the engine will refuse to start; lower --max-model-len, raise the parallelism or "
            "choose a larger GPU"
        )
    else:
        out.append(
            f"{_gib(b.kv_cache)} is left for the KV cache: {b.max_tokens:,} tokens, or "
            f"{b.concurrency:.1f} concurrent requests of {max_len} tokens"
        )
    out.append(
        "sized from the safetensors headers (the bytes of every tensor)"
        if basis is Basis.HEADERS
        else "sized from config.json alone: shapes and bytes are estimated from the architecture "
        "and its quantization config, a weaker basis than the safetensors headers"
    )
    if not gpu.usable_measured:
        out.append(f"{gpu.name}: {gpu.usable_source}; no measured figure was found")
    return (*out, *cost.notes)


def context_note(arch: Architecture, options: FitOptions) -> tuple[str, ...]:
    """A reason when ``--max-model-len`` asks for more than the model's context."""
    asked = options.max_model_len
    if asked is None or asked <= arch.max_position:
        return ()
    return (
        f"--max-model-len {asked:,} exceeds the model's context of {arch.max_position:,} tokens "
        "(max_position_embeddings in config.json): vLLM refuses it unless "
        "VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, and the model was not trained past its context; "
        f"this prediction sizes {asked:,} tokens as asked",
    )


def predict(source: ModelSource, options: FitOptions) -> FitResult:
    """The fit of ``source`` on ``options.gpu`` at ``options.parallelism``."""
    arch = arch_mod.parse(source.config, source=f"{source.name}: config.json")  # 1
    check_layout(arch, options)
    gpu = lookup(options.gpu)
    basis = Basis.HEADERS if source.tensors is not None else Basis.CONFIG  # 2
    tensors = source.tensors if source.tensors is not None else estimate.tensors(arch)
    layout = options.parallelism
    weights_bytes, by_class = weights.per_gpu(
        tensors, arch, layout, language_only=options.language_only
    )
    made = weights.engine_made(arch, layout)
    by_class = (*by_class, *made)
    weights_bytes += sum(m.bytes_per_gpu for m in made)
    max_len = options.max_model_len or arch.max_position  # 3
    cost = kv.cost(arch, options, max_len)
    overhead = overhead_bytes(options)
    b = _budget(gpu, options, weights_bytes + overhead, cost, max_len)
    fits = b.kv_cache >= b.one_request  # 4
    return FitResult(
        model=source.name,
        architecture=arch.name,
        gpu=gpu,
        options=options,
        basis=basis,
        weights_bytes_per_gpu=weights_bytes,
        by_class=by_class,
        overhead_bytes_per_gpu=overhead,
        kv=cost,
        kv_cache_bytes_per_gpu=max(b.kv_cache, 0),
        max_model_len=max_len,
        max_tokens_in_kv_cache=b.max_tokens,
        max_concurrency_at_max_len=b.concurrency,
        fits=fits,
        margin_bytes=b.kv_cache - b.one_request,
        reasons=(
            *context_note(arch, options),
            *_reasons(gpu, options, basis, weights_bytes, b, cost, max_len),
        ),
    )
