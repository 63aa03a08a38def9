"""Record the facts a package pins about the GPU run: hardware, engine build, weight residency.

Prints one JSON object:
  hardware   GPU name, count, memory per GPU and driver (from nvidia-smi)
  engine     transformers and torch versions, and the sha256 of transformers' installed RECORD
  residency  GiB allocated by the model's weights on GPU 0, with free memory before and after
             loading and the GPU's total
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from importlib import metadata
from pathlib import Path

GIB = 1024**3


def hardware() -> dict[str, object]:
    query = "name,memory.total,driver_version"
    out = subprocess.run(
        ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
        capture_output=True, text=True, check=True,
    ).stdout.strip().splitlines()  # fmt: skip
    name, mem_mib, driver = (part.strip() for part in out[0].split(","))
    return {"gpu": name, "count": len(out), "memory_mib": int(mem_mib), "driver": driver}


def record_sha256(distribution: str) -> str:
    """sha256 of an installed distribution's RECORD, as importlib.metadata reads it."""
    record = metadata.distribution(distribution).read_text("RECORD") or ""
    return hashlib.sha256(record.encode()).hexdigest()


def engine() -> dict[str, object]:
    import torch

    return {
        "transformers": metadata.version("transformers"),
        "record_sha256": record_sha256("transformers"),
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "python": sys.version.split()[0],
    }


def residency(model_dir: Path) -> dict[str, float]:
    import torch
    from transformers import AutoModelForCausalLM

    torch.cuda.init()
    free_before, total = torch.cuda.mem_get_info(0)
    before = torch.cuda.memory_allocated(0)
    model = AutoModelForCausalLM.from_pretrained(
        model_dir, dtype=torch.bfloat16, device_map="cuda:0"
    )
    torch.cuda.synchronize()
    weights = torch.cuda.memory_allocated(0) - before
    free_after, _ = torch.cuda.mem_get_info(0)
    params = sum(p.numel() for p in model.parameters())
    return {
        "weights_gib": weights / GIB,
        "free_gib_before_load": free_before / GIB,
        "free_gib_after_load": free_after / GIB,
        "total_gib": total / GIB,
        "parameters": params,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    args = parser.parse_args()
    facts = {"hardware": hardware(), "engine": engine(), "residency": residency(args.model)}
    print(json.dumps(facts, indent=2))


if __name__ == "__main__":
    main()
