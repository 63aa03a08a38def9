"""vLLM (``vllm serve``): the OpenAI-compatible server of vllm-project/vllm.

Stock values are vLLM 0.11's engine-argument defaults on a GPU (``vllm/engine/arg_utils.py``;
the V1 engine's usage-context defaults for ``max_num_seqs`` and ``max_num_batched_tokens``
on the OpenAI server depend on the GPU, so none is stated and the stock command sets none).
"""

from __future__ import annotations

from servekit.engines.models import (
    AUTO,
    COMMON_LOAD,
    WEIGHT_FORMATS,
    EngineSpec,
    FitConstants,
    Flag,
    FlagKind,
    MultiNode,
)

RAY_PORT = 6379
RAY = MultiNode(
    leader_setup=f"ray start --head --port={RAY_PORT}",
    worker_exec=f'exec ray start --address="$LWS_LEADER_ADDRESS:{RAY_PORT}" --block',
)

# The engine's own reserve per GPU besides weights and KV cache: activation peak,
# CUDA graphs, CUDA context and communication buffers. vLLM 0.11.2 startup logs of
# five multi-GPU H200 configurations (docs/fit.md) leave 5.5 to 8.7 GiB between the
# requested memory and weights + KV; one single-GPU log leaves 1.43 GiB.
FIT = FitConstants(gpu_memory_utilization=0.92, overhead_single_gib=2.0, overhead_multi_gib=6.0)

_DTYPES = ("auto", "half", "float16", "bfloat16", "float", "float32")
_KV_DTYPES = ("auto", "fp8", "fp8_e4m3", "fp8_e5m2")

FLAGS = (
    Flag("--max-num-seqs", FlagKind.INT, None, 1, 4096,
         help="requests in one batch (the scheduler's batch limit)"),
    Flag("--max-num-batched-tokens", FlagKind.INT, None, 16, 1 << 20,
         help="tokens one scheduler step may process (prefill chunk plus decodes)"),
    Flag("--enable-chunked-prefill", FlagKind.BOOL, True,
         help="split long prefills into chunks interleaved with decodes"),
    Flag("--gpu-memory-utilization", FlagKind.FLOAT, FIT.gpu_memory_utilization, 0.05, 1.0,
         help="share of GPU memory the engine takes; the KV cache gets what weights leave"),
    Flag("--enable-prefix-caching", FlagKind.BOOL, True, help="reuse KV blocks of shared prefixes"),
    Flag("--block-size", FlagKind.CHOICE, None, choices=("8", "16", "32", "64", "128"),
         help="tokens per KV-cache block"),
    Flag("--max-seq-len-to-capture", FlagKind.INT, None, 1, 1 << 20,
         help="longest sequence CUDA graphs cover"),
    Flag("--dtype", FlagKind.CHOICE, "auto", choices=_DTYPES, changes_outputs=True,
         help="weights and activations dtype"),
    Flag("--kv-cache-dtype", FlagKind.CHOICE, "auto", choices=_KV_DTYPES, changes_outputs=True,
         help="KV-cache dtype (fp8 changes outputs)"),
    Flag("--quantization", FlagKind.CHOICE, None, choices=("fp8", "awq", "gptq", "bitsandbytes"),
         changes_outputs=True, help="runtime weight quantization"),
    Flag("--speculative-config", FlagKind.CHOICE, None, choices=(), changes_outputs=True,
         help="speculative decoding (JSON); lossless only with exact acceptance"),
)  # fmt: skip

SPEC = EngineSpec(
    name="vllm",
    entrypoint=("vllm", "serve"),
    revision_flags=("--revision", "--code-revision", "--tokenizer-revision"),
    served_name_flag="--served-model-name",
    host_flag="--host",
    port_flag="--port",
    multinode=RAY,
    load_flags=COMMON_LOAD
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
        # how the weights are read; a format that changes them (dummy: random values in the
        # checkpoint's shapes) is also on the numerics list below, so no figure of it
        # passes as the model's own (SK108)
        "--load-format",
    },
    numerics_flags={
        "--kv-cache-dtype": AUTO,
        "--quantization": None,
        "-q": None,
        "--calculate-kv-scales": None,
        "--speculative-config": frozenset(),  # lossless only when its acceptance is exact
        "--dtype": AUTO,
        "--load-format": WEIGHT_FORMATS,
        "--hf-overrides": None,
        "--config": None,
    },
    preallocates=True,
    # the implementation of top-k/top-p sampling (FlashInfer's kernels or PyTorch's): an
    # install without FlashInfer must set 0, or the engine core dies at start
    neutral_env=frozenset({"VLLM_USE_FLASHINFER_SAMPLER"}),
    flags=FLAGS,
    fit=FIT,
    release_image="vllm/vllm-openai:v{version}",
)
