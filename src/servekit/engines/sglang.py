"""SGLang (``python -m sglang.launch_server``): sgl-project/sglang's HTTP server.

Its model is a flag (``--model-path``); it answers ``/health``, ``/get_model_info``
(``model_path``), ``/get_server_info`` (the server arguments and ``version``) and the
OpenAI routes (``/v1/models``). Stock values are SGLang 0.4's ``ServerArgs`` defaults;
``--chunked-prefill-size`` and ``--max-running-requests`` depend on the GPU, so none is stated.
SGLang has no multi-node launch in servekit's kits yet (its ``--nnodes``/``--node-rank``
form needs each pod's rank).
"""

from __future__ import annotations

from servekit.engines.models import (
    AUTO,
    COMMON_LOAD,
    WEIGHT_FORMATS,
    EngineSpec,
    Flag,
    FlagKind,
    Probe,
)

FLAGS = (
    Flag("--max-running-requests", FlagKind.INT, None, 1, 4096,
         help="requests running at once (the batch limit)"),
    Flag("--chunked-prefill-size", FlagKind.INT, None, -1, 1 << 20,
         help="tokens per prefill chunk (-1 turns chunking off)"),
    Flag("--max-prefill-tokens", FlagKind.INT, 16384, 16, 1 << 20,
         help="tokens one prefill batch may hold"),
    Flag("--mem-fraction-static", FlagKind.FLOAT, None, 0.05, 1.0,
         help="share of GPU memory for weights and KV cache"),
    Flag("--schedule-policy", FlagKind.CHOICE, "fcfs", choices=("lpm", "random", "fcfs", "dfs-weight"),
         help="the order waiting requests are scheduled in"),
    Flag("--schedule-conservativeness", FlagKind.FLOAT, 1.0, 0.0, 10.0,
         help="how much KV room the scheduler keeps free"),
    Flag("--cuda-graph-max-bs", FlagKind.INT, None, 1, 4096, help="largest batch CUDA graphs cover"),
    Flag("--dtype", FlagKind.CHOICE, "auto", choices=("auto", "half", "float16", "bfloat16", "float", "float32"),
         changes_outputs=True, help="weights and activations dtype"),
    Flag("--kv-cache-dtype", FlagKind.CHOICE, "auto", choices=("auto", "fp8_e5m2", "fp8_e4m3"),
         changes_outputs=True, help="KV-cache dtype (fp8 changes outputs)"),
    Flag("--quantization", FlagKind.CHOICE, None, choices=("fp8", "awq", "gptq", "w8a8_int8"),
         changes_outputs=True, help="runtime weight quantization"),
    Flag("--speculative-algorithm", FlagKind.CHOICE, None, choices=("EAGLE", "EAGLE3", "NEXTN"),
         changes_outputs=True, help="speculative decoding"),
)  # fmt: skip

SPEC = EngineSpec(
    name="sglang",
    entrypoint=("python", "-m", "sglang.launch_server"),
    model_arg="--model-path",
    revision_flags=("--revision",),
    served_name_flag="--served-model-name",
    host_flag="--host",
    port_flag="--port",
    load_flags=COMMON_LOAD
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
    numerics_flags={
        "--kv-cache-dtype": AUTO,
        "--quantization": None,
        "--speculative-algorithm": frozenset(),
        "--dtype": AUTO,
        "--load-format": WEIGHT_FORMATS,
        "--torchao-config": frozenset({""}),
        "--json-model-override-args": None,
        "--config": None,
    },
    preallocates=True,
    flags=FLAGS,
    probe=Probe(version=("/version", "/get_server_info"), model_info="/get_model_info"),
    release_image="lmsysorg/sglang:v{version}",
)
