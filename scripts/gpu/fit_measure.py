"""Measure what vLLM keeps on the GPU for one model's weights, from its config.json alone.

Run on the device by scripts/gpu/fit_run.sh (docs/fit.md, "Measured by servekit"):

    python3 scripts/gpu/fit_measure.py CONFIG.json RESULT.json

Steps:
  1. make a model directory holding only that config.json;
  2. start vLLM in this process (VLLM_ENABLE_V1_MULTIPROCESSING=0) with ``--load-format
     dummy`` (random weights in the checkpoint's exact shapes and dtypes: nothing is
     downloaded), no tokenizer, eager mode, a small context and a fixed 1 GiB KV cache,
     TP 1; the CUDA caching allocator records where every block was allocated;
  3. read the bytes behind vLLM's "Model loading took X GiB" (the model runner's
     ``model_memory_usage``, torch-allocated bytes after loading minus before);
  4. sum the bytes of every parameter and buffer of the loaded model, by module class,
     tensor name and dtype (each storage counted once: tied embeddings share one);
  5. list the CUDA blocks allocated while the model loaded that no parameter or buffer
     owns (workspaces, caches kept in globals), by the vLLM frame that allocated them.

Writes one JSON object; never prints a figure it did not read.
"""

from __future__ import annotations

import bisect
import json
import os
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_USE_FLASHINFER_SAMPLER", "0")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("VLLM_NO_USAGE_STATS", "1")

GIB = 2**30
LOAD_FRAME = "load_model"
KV_BYTES = 2**30


def model_dir(config: Path) -> Path:
    """1. A directory holding only the config (no tokenizer, no weights)."""
    d = Path(tempfile.mkdtemp(prefix="fit-")) / config.stem
    d.mkdir()
    (d / "config.json").write_text(config.read_text())
    return d


def start(path: Path, utilization: float, max_len: int) -> Any:
    """2. vLLM in this process, dummy weights, eager, TP 1.

    A fixed KV cache (``kv_cache_memory_bytes``) skips vLLM's memory profiling, so several
    of these processes can share the GPU: what one measures is its own torch allocations.
    """
    from vllm import LLM

    return LLM(
        model=str(path),
        load_format="dummy",
        skip_tokenizer_init=True,
        enforce_eager=True,
        max_model_len=max_len,
        max_num_seqs=4,
        max_num_batched_tokens=max_len,
        gpu_memory_utilization=utilization,
        kv_cache_memory_bytes=KV_BYTES,
        tensor_parallel_size=1,
        generation_config="vllm",
        seed=0,
    )


def runner(llm: Any) -> Any:
    """The GPU model runner of the in-process engine (LLM -> engine core -> executor)."""
    path = ("llm_engine", "engine_core", "engine_core", "model_executor", "driver_worker")
    obj = llm
    for attr in path:
        obj = getattr(obj, attr, None)
    if obj is not None:
        return getattr(obj, "worker", obj).model_runner
    return llm.collective_rpc(lambda w: getattr(w, "worker", w).model_runner)[0]


def tensors(model: Any) -> list[tuple[str, str, Any]]:
    """(name, owning module class, tensor) for every parameter and buffer, once each."""
    owner = {name: type(mod).__name__ for name, mod in model.named_modules()}
    out = []
    for kind in (model.named_parameters, model.named_buffers):
        for name, t in kind(remove_duplicate=True):
            out.append((name, owner.get(name.rpartition(".")[0], "?"), t))
    return out


def breakdown(model: Any) -> dict[str, Any]:
    """4. Bytes by (module class, tensor leaf name, dtype); layer 0 and non-layer tensors listed."""
    seen: set[int] = set()
    groups: dict[tuple[str, str, str], list[int]] = defaultdict(lambda: [0, 0])
    detail = []
    total = 0
    for name, module, t in tensors(model):
        if not t.is_cuda:
            continue
        storage = t.untyped_storage()
        if storage.data_ptr() in seen:
            continue
        seen.add(storage.data_ptr())
        nbytes = storage.nbytes()
        total += nbytes
        g = groups[(module, name.rpartition(".")[2], str(t.dtype).removeprefix("torch."))]
        g[0] += 1
        g[1] += nbytes
        if ".layers." not in name or ".layers.0." in name:
            detail.append([name, module, list(t.shape), str(t.dtype), nbytes])
    rows = [
        {"module": m, "tensor": n, "dtype": d, "count": c, "bytes": b}
        for (m, n, d), (c, b) in sorted(groups.items(), key=lambda kv: -kv[1][1])
    ]
    return {"total_bytes": total, "groups": rows, "layer0_and_outside": detail, "ptrs": seen}


def _frame(frames: list[dict[str, Any]]) -> str:
    """The innermost vLLM frame of an allocation's stack."""
    for f in frames:
        if "/vllm/" in f["filename"]:
            short = f["filename"].split("/vllm/", 1)[1]
            return f"vllm/{short}:{f['line']} {f['name']}"
    return frames[0]["name"] if frames else "?"


def load_blocks(snapshot: dict[str, Any], ptrs: set[int]) -> dict[str, Any]:
    """5. Live blocks allocated inside load_model, split into owned by a tensor or not."""
    blocks = [
        b
        for seg in snapshot["segments"]
        for b in seg["blocks"]
        if b["state"] == "active_allocated"
        and any(f["name"] == LOAD_FRAME for f in b.get("frames", []))
    ]
    blocks.sort(key=lambda b: b["address"])
    starts = [b["address"] for b in blocks]
    owned: set[int] = set()
    for p in ptrs:
        i = bisect.bisect_right(starts, p) - 1
        if i >= 0 and p < blocks[i]["address"] + blocks[i]["size"]:
            owned.add(i)
    other: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for i, b in enumerate(blocks):
        if i not in owned:
            o = other[_frame(b.get("frames", []))]
            o[0] += 1
            o[1] += b["size"]
    return {
        "blocks": len(blocks),
        "bytes": sum(b["size"] for b in blocks),
        "owned_bytes": sum(blocks[i]["size"] for i in owned),
        "other": sorted(
            ({"where": k, "count": c, "bytes": s} for k, (c, s) in other.items()),
            key=lambda r: -r["bytes"],
        ),
    }


def measure(config: Path, utilization: float, max_len: int) -> dict[str, Any]:
    import torch

    torch.cuda.memory._record_memory_history(max_entries=2_000_000, stacks="python")
    t0 = time.time()
    llm = start(model_dir(config), utilization, max_len)
    started = time.time() - t0
    run = runner(llm)
    # get_model() unwraps a CUDA-graph wrapper (none in eager mode, but harmless)
    parts = breakdown(run.get_model() if hasattr(run, "get_model") else run.model)
    blocks = load_blocks(torch.cuda.memory._snapshot(), parts.pop("ptrs"))
    torch.cuda.memory._record_memory_history(enabled=None)
    quant = getattr(run.model_config, "quantization", None)
    return {
        "config": config.stem,
        "model_memory_usage_bytes": int(run.model_memory_usage),
        "model_loading_gib_logged": round(run.model_memory_usage / GIB, 2),
        "params_and_buffers_bytes": parts["total_bytes"],
        "quantization": quant,
        "runner": f"{type(run).__module__}.{type(run).__name__}",
        "dtype": str(run.model_config.dtype),
        "gpu_memory_utilization": utilization,
        "max_model_len": max_len,
        "engine_start_s": round(started, 1),
        "load_time_blocks": blocks,
        "groups": parts["groups"],
        "layer0_and_outside": parts["layer0_and_outside"],
    }


def main() -> int:
    config, out = Path(sys.argv[1]), Path(sys.argv[2])
    utilization = float(os.environ.get("FIT_UTIL", "0.05"))
    max_len = int(os.environ.get("FIT_MAX_LEN", "1024"))
    result = measure(config, utilization, max_len)
    out.write_text(json.dumps(result, indent=1))
    mem = result["model_memory_usage_bytes"]
    print(
        f"FIT {config.stem}: model loading {mem} B ({mem / GIB:.4f} GiB), "
        f"params+buffers {result['params_and_buffers_bytes'] / GIB:.4f} GiB"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
