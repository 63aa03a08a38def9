"""Hugging Face ``transformers serve``: the model is ``REPO@COMMIT`` (no revision flag).

It reserves its KV cache up front only with ``--continuous-batching``; it has no
multi-node launch and no batch-limit flags a tuner could search.
"""

from __future__ import annotations

from servekit.engines.models import AUTO, COMMON_LOAD, EngineSpec, Flag, FlagKind

FLAGS = (
    Flag("--continuous-batching", FlagKind.BOOL, False,
         help="batch requests continuously (reserves the KV cache up front)"),
    Flag("--dtype", FlagKind.CHOICE, "auto", choices=("auto", "bfloat16", "float16", "float32"),
         changes_outputs=True, help="weights dtype"),
)  # fmt: skip

SPEC = EngineSpec(
    name="transformers",
    entrypoint=("transformers", "serve"),
    revision_in_model=True,
    host_flag="--host",
    port_flag="--port",
    load_flags=COMMON_LOAD,
    numerics_flags={"--quantization": None, "--dtype": AUTO, "--torch-dtype": AUTO},
    preallocating_flags=frozenset({"--continuous-batching"}),
    flags=(
        Flag(
            "--continuous-batching",
            FlagKind.BOOL,
            False,
            help="batch requests continuously (reserves the KV cache up front)",
        ),
        Flag(
            "--dtype",
            FlagKind.CHOICE,
            "auto",
            choices=("auto", "bfloat16", "float16", "float32"),
            changes_outputs=True,
            help="weights dtype",
        ),
    ),
)
