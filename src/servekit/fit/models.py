"""Frozen, typed models of a fit prediction: its inputs, the tensors it counts, its verdict."""

from __future__ import annotations

from enum import StrEnum

from pydantic import BaseModel, ConfigDict, Field

from servekit.engines import vllm

GIB = 1 << 30

# The ``--json`` keys docs/fit.md promises to keep; more detail follows them.
STABLE_JSON_KEYS = (
    "weights_gib_per_gpu",
    "kv_bytes_per_token_per_gpu",
    "kv_cache_gib_per_gpu",
    "max_tokens_in_kv_cache",
    "fits",
    "margin_gib",
    "basis",
    "reasons",
)


class Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Basis(StrEnum):
    """Where the weight bytes come from."""

    HEADERS = "headers"  # the safetensors headers' data offsets: every tensor's real size
    CONFIG = "config"  # shapes derived from config.json and its quantization config


class KvDtype(StrEnum):
    AUTO = "auto"
    FP8 = "fp8"


class TensorClass(StrEnum):
    """How vLLM places a tensor over the GPUs (see docs/fit.md)."""

    TP_SPLIT = "tensor-parallel projection"
    REPLICATED = "replicated"
    KV_PROJ = "K/V projection"
    VOCAB = "vocab-parallel embedding or LM head"
    ROUTED_EXPERT = "routed expert"
    SHARED_EXPERT = "shared expert"
    VISION = "vision tower"
    NOT_LOADED = "not loaded"
    ENGINE_COPY = "engine-made copy (MLA absorbed weights)"
    ROPE_CACHE = "engine-made rotary cos/sin cache"


class Tensor(Model):
    """One tensor: its name, stored dtype, shape and bytes (from the header's data offsets)."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    nbytes: int = Field(ge=0)


class Parallelism(Model):
    tp: int = Field(default=1, ge=1)
    dp: int = Field(default=1, ge=1)
    pp: int = Field(default=1, ge=1)
    ep: bool = False

    @property
    def expert_split(self) -> int:
        """How many GPUs share the routed experts of one layer."""
        return self.tp * self.dp if self.ep else self.tp


class FitOptions(Model):
    gpu: str
    parallelism: Parallelism = Parallelism()
    max_model_len: int | None = Field(default=None, ge=1)
    gpu_memory_utilization: float = Field(default=vllm.FIT.gpu_memory_utilization, gt=0, le=1)
    kv_cache_dtype: KvDtype = KvDtype.AUTO
    language_only: bool = False


class GpuSpec(Model):
    """One GPU model: its memory as sold and as the framework sees it, each with a source."""

    name: str
    total_gb: float = Field(gt=0, description="Memory as sold, in decimal GB.")
    total_source: str
    usable_gib: float = Field(gt=0, description="Total memory the CUDA/ROCm runtime reports.")
    usable_source: str
    usable_measured: bool


class ClassBytes(Model):
    """Bytes per GPU of one tensor class (the busiest GPU)."""

    tensor_class: TensorClass
    tensors: int
    bytes_per_gpu: int


class KvCost(Model):
    bytes_per_token_per_gpu: int
    bytes_per_request_per_gpu: int = 0  # sliding-window and linear-attention state
    notes: tuple[str, ...] = ()


class FitResult(Model):
    """The prediction for one model on one GPU type at one parallel layout."""

    model: str
    architecture: str
    gpu: GpuSpec
    options: FitOptions
    basis: Basis
    weights_bytes_per_gpu: int
    by_class: tuple[ClassBytes, ...]
    overhead_bytes_per_gpu: int
    kv: KvCost
    kv_cache_bytes_per_gpu: int
    max_model_len: int
    max_tokens_in_kv_cache: int
    max_concurrency_at_max_len: float
    fits: bool
    margin_bytes: int
    reasons: tuple[str, ...]

    def as_json(self) -> dict[str, object]:
        """The stable ``--json`` keys (docs/fit.md), then the detail."""
        return {
            "weights_gib_per_gpu": round(self.weights_bytes_per_gpu / GIB, 4),
            "kv_bytes_per_token_per_gpu": self.kv.bytes_per_token_per_gpu,
            "kv_cache_gib_per_gpu": round(self.kv_cache_bytes_per_gpu / GIB, 4),
            "max_tokens_in_kv_cache": self.max_tokens_in_kv_cache,
            "fits": self.fits,
            "margin_gib": round(self.margin_bytes / GIB, 4),
            "basis": self.basis.value,
            "reasons": list(self.reasons),
            "model": self.model,
            "architecture": self.architecture,
            "gpu": self.gpu.name,
            "gpu_usable_gib": self.gpu.usable_gib,
            "max_model_len": self.max_model_len,
            "max_concurrency_at_max_len": round(self.max_concurrency_at_max_len, 2),
            "overhead_gib_per_gpu": round(self.overhead_bytes_per_gpu / GIB, 4),
            "weights_by_class_gib": {
                c.tensor_class.value: round(c.bytes_per_gpu / GIB, 4) for c in self.by_class
            },
        }
