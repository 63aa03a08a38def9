"""Documented per-engine lists the rules read (docs/rules.md prints them).

* :data:`LOAD_FLAGS`: flags a *stock* serve command may carry: they are needed to load
  the model on the hardware, or only name things (port, served name), and change no
  serving behaviour the engine would otherwise default to;
* :data:`NEUTRAL_ENV`: environment variables a stock run may set (paths, credentials,
  device selection);
* :data:`NUMERICS_FLAGS`: flags that change numerics at runtime, with the values that do
  not (``None``: every value does);
* :data:`PREALLOCATING` and :data:`PREALLOCATING_FLAGS`: engines (or an engine's flags)
  that reserve most of the GPU's memory up front, so no memory reading of them measures
  the model.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from servekit.package.evidence import ServeConfig

_COMMON_LOAD: Final = frozenset(
    {"--host", "--port", "--served-model-name", "--trust-remote-code", "--download-dir",
     "--revision", "--tokenizer", "--tokenizer-revision", "--model", "--api-key",
     "--uvicorn-log-level", "--disable-log-requests", "--disable-log-stats"}
)  # fmt: skip

LOAD_FLAGS: Final[dict[str, frozenset[str]]] = {
    "vllm": _COMMON_LOAD
    | {
        "--tensor-parallel-size",
        "-tp",
        "--pipeline-parallel-size",
        "-pp",
        "--data-parallel-size",
        "-dp",
        "--max-model-len",
        "--enable-expert-parallel",
        "--distributed-executor-backend",
        "--gpu-memory-utilization",
        "--seed",
    },
    "sglang": _COMMON_LOAD
    | {
        "--model-path",
        "--tp",
        "--tp-size",
        "--dp",
        "--dp-size",
        "--context-length",
        "--mem-fraction-static",
        "--random-seed",
    },
    "transformers": _COMMON_LOAD,
    "servekit-sim": _COMMON_LOAD | {"--seed", "--max-model-len"},
}

NEUTRAL_ENV: Final = frozenset(
    {"CUDA_VISIBLE_DEVICES", "HF_HOME", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE",
     "HF_HUB_CACHE", "TRANSFORMERS_OFFLINE", "TRANSFORMERS_CACHE", "NCCL_DEBUG", "PATH",
     "HOME", "TMPDIR"}
)  # fmt: skip

# flag -> values that leave numerics alone (None: any use changes them)
NUMERICS_FLAGS: Final[dict[str, dict[str, frozenset[str] | None]]] = {
    "vllm": {
        "--kv-cache-dtype": frozenset({"auto"}),
        "--quantization": None,
        "-q": None,
        "--calculate-kv-scales": None,
        "--speculative-config": frozenset(),  # lossless only when its acceptance is exact
    },
    "sglang": {
        "--kv-cache-dtype": frozenset({"auto"}),
        "--quantization": None,
        "--speculative-algorithm": frozenset(),
    },
}
LOSSLESS_SPECULATION: Final = ("rejection_sampler",)
"""A speculative configuration naming one of these acceptance methods keeps outputs exact."""

PREALLOCATING: Final = frozenset({"vllm", "sglang", "tensorrt-llm", "trtllm"})
PREALLOCATING_FLAGS: Final[dict[str, frozenset[str]]] = {
    "transformers": frozenset({"--continuous-batching"}),  # reserves its KV cache up front
}


def preallocates(engine: str, argv: tuple[str, ...]) -> bool:
    """Whether ``engine`` run with ``argv`` reserves most GPU memory up front."""
    name = engine.lower()
    flagged = PREALLOCATING_FLAGS.get(name, frozenset())
    return name in PREALLOCATING or any(flag in flagged for flag, _ in flags(argv))


def flags(argv: tuple[str, ...]) -> Iterator[tuple[str, str | None]]:
    """(flag, value) pairs of an argument vector: ``--f v``, ``--f=v``, or a bare ``--f``."""
    for i, word in enumerate(argv):
        if not word.startswith("-") or word in ("-", "--"):
            continue
        name, eq, value = word.partition("=")
        if eq:
            yield name, value
        else:
            following = argv[i + 1] if i + 1 < len(argv) else None
            yield name, following if following and not following.startswith("-") else None


def not_stock(engine: str, serve: ServeConfig) -> list[str]:
    """What makes ``serve`` more than the engine's defaults plus load-needed settings."""
    allowed = LOAD_FLAGS.get(engine.lower())
    if allowed is None:
        return [f"no documented list of load-needed flags for engine '{engine}'"]
    out = [f"flag {name}" for name, _ in flags(serve.argv) if name not in allowed]
    return out + [f"environment {name}" for name in serve.env if name not in NEUTRAL_ENV]


def numerics_changes(engine: str, argv: tuple[str, ...]) -> list[str]:
    """Flags in ``argv`` that change numerics at runtime for ``engine``."""
    listed = NUMERICS_FLAGS.get(engine.lower(), {})
    out = []
    for name, value in flags(argv):
        if name not in listed:
            continue
        harmless = listed[name]
        if name in ("--speculative-config", "--speculative-algorithm"):
            if value is None or not any(m in value for m in LOSSLESS_SPECULATION):
                out.append(f"{name} {value or ''}".strip())
        elif harmless is None or (value or "") not in harmless:
            out.append(f"{name} {value or ''}".strip())
    return out
