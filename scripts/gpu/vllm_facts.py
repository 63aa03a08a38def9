"""Record the facts the vLLM package pins about its GPU run: hardware and engine build.

Prints one JSON object: the GPU (from nvidia-smi, as scripts/gpu/facts.py reads it), and
the versions of vLLM, torch and transformers with the sha256 of vLLM's installed RECORD
(the file that lists every installed file with its hash).
"""

from __future__ import annotations

import json
import sys
from importlib import metadata

from facts import hardware, record_sha256


def engine() -> dict[str, object]:
    import torch

    return {
        "vllm": metadata.version("vllm"),
        "record_sha256": record_sha256("vllm"),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "transformers": metadata.version("transformers"),
        "python": sys.version.split()[0],
    }


if __name__ == "__main__":
    print(json.dumps({"hardware": hardware(), "engine": engine()}, indent=2))
