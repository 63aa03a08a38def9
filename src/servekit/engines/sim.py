"""servekit's simulator (``servekit sim serve``): no weights, no numerics, exact timing.

Its performance model (:mod:`servekit.bench.sim.perf`) answers to the flags a tuner
searches on real engines, spelled as vLLM spells them. The timing flags (``--ttft-ms``,
``--itl-ms``...) and the model's hardware (``--kv-tokens``, ``--oom-above``, ``--noise``)
stand for the model and the GPU, so a stock command may carry them. Each start of the
simulated host draws its run-to-run noise from ``SERVEKIT_SIM_NOISE_SEED``, which the
tuner sets per engine start (:data:`SPEC`'s ``noise_seed_env``).
"""

from __future__ import annotations

from servekit.engines.models import COMMON_LOAD, EngineSpec, Flag, FlagKind

NOISE_SEED_ENV = "SERVEKIT_SIM_NOISE_SEED"

HARDWARE_FLAGS = frozenset(
    {"--ttft-ms", "--itl-ms", "--prefill-us-per-token", "--batch-slowdown", "--jitter",
     "--natural-length", "--kv-tokens", "--oom-above", "--pad-cost", "--chunk-step-ms",
     "--step-us-per-token", "--noise"}
)  # fmt: skip
"""The simulated model and GPU: timing, KV-cache capacity, memory limit, host noise."""

FLAGS = (
    Flag("--max-num-seqs", FlagKind.INT, 256, 1, 4096,
         help="requests in one batch; idle batch slots cost padding"),
    Flag("--max-num-batched-tokens", FlagKind.INT, 2048, 16, 1 << 20,
         help="tokens per step: prefill chunks of this size, each step slowed by its size"),
    Flag("--enable-chunked-prefill", FlagKind.BOOL, True,
         help="chunked prefill (off: the token budget must hold --max-model-len)"),
    Flag("--gpu-memory-utilization", FlagKind.FLOAT, 0.9, 0.05, 1.0,
         help="memory share; the KV cache grows with it, and above --oom-above start fails"),
)  # fmt: skip

SPEC = EngineSpec(
    name="servekit-sim",
    entrypoint=("servekit", "sim", "serve"),
    model_arg="--model",
    host_flag="--host",
    port_flag="--port",
    load_flags=COMMON_LOAD | {"--seed", "--max-model-len"} | HARDWARE_FLAGS,
    numerics_flags={},  # no weights, no numerics to change
    flags=FLAGS,
    neutral_env=frozenset({NOISE_SEED_ENV}),
    noise_seed_env=NOISE_SEED_ENV,
    release_image="servekit.local/servekit-sim:{version}",
)
