"""Convert the SmolLM2-135M-Instruct Q4_1 GGUF to a bf16 checkpoint vLLM serves.

transformers dequantizes the GGUF's tensors when it loads it (``gguf_file=``); it refuses to
``save_pretrained`` a model loaded that way, so the state dict goes into a fresh
``LlamaForCausalLM`` built from the same config (without ``quantization_config``), which is
saved as one bf16 ``model.safetensors`` with the GGUF's tokenizer and chat template. The bytes
are the same on every machine (``../shared/notes/gpu-vllm.md``); prints one JSON line with the
input's and output's sha256.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from pathlib import Path


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def convert(gguf: Path, out: Path) -> dict[str, str]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LlamaForCausalLM

    src, name = str(gguf.parent), gguf.name
    loaded = AutoModelForCausalLM.from_pretrained(src, gguf_file=name, dtype=torch.bfloat16)
    config = loaded.config
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    # The output head is tied to the embeddings in SmolLM2; anything else missing is a bug.
    if unexpected or [k for k in missing if k != "lm_head.weight"]:
        raise SystemExit(f"state dict mismatch: missing {missing}, unexpected {unexpected}")
    model.tie_weights()
    model.save_pretrained(out, safe_serialization=True)
    AutoTokenizer.from_pretrained(src, gguf_file=name).save_pretrained(out)
    return {
        "gguf": name,
        "gguf_sha256": sha256(gguf),
        "safetensors_sha256": sha256(out / "model.safetensors"),
        "parameters": str(sum(p.numel() for p in model.parameters())),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("gguf", type=Path)
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    print(json.dumps(convert(args.gguf, args.out)))


if __name__ == "__main__":
    main()
