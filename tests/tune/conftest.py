"""Tuning sessions on the simulator, shared by the tests that read their packages."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from servekit.cli.main import main

WORKLOAD = {
    "id": "sim-512", "description": "512-token prompts, 16-token answers, 8 at once",
    "prompt_tokens": [512, 512], "output_tokens": 16, "concurrency": 8, "requests": 8,
    "warmup": 1, "seed": 7, "context_length": 1024,
}  # fmt: skip
SIM_GPU = ["--ttft-ms", "20", "--itl-ms", "8", "--max-model-len", "1024", "--kv-tokens", "11000"]
SPACE = {  # 8 points, 4 of which run the simulated GPU out of memory (0.99 > 0.96)
    "fixed": SIM_GPU,
    "search": {"--max-num-seqs": [8, 64], "--max-num-batched-tokens": [512, 2048],
               "--gpu-memory-utilization": [0.9, 0.99]},
}  # fmt: skip
OPTIMUM = {"--max-num-seqs": 8, "--max-num-batched-tokens": 512, "--gpu-memory-utilization": 0.9}
"""The performance model's optimum of SPACE (stock: 256 seqs, 2048 tokens, 0.9). Times are
long enough (8 ms a token) that a loaded host's hiccups stay small beside them."""


def write_inputs(
    root: Path, workload: dict[str, Any], space: dict[str, Any]
) -> tuple[Path, Path, Path]:
    model = root / "model"
    model.mkdir(parents=True, exist_ok=True)
    (model / "config.json").write_text('{"model_type": "llama"}\n')
    (root / "workload.yaml").write_text(yaml.safe_dump(workload))
    (root / "space.yaml").write_text(yaml.safe_dump(space))
    return model, root / "workload.yaml", root / "space.yaml"


def run_tune(
    root: Path, *extra: str, workload: dict[str, Any] = WORKLOAD, space: dict[str, Any] = SPACE
) -> int:
    model, wl, sp = write_inputs(root, workload, space)
    args = ["-q", "tune", "--engine", "sim", "--model", str(model), "--workload", str(wl),
            "--space", str(sp), "--out", str(root / "out"), "--hardware", "1x SIM-1", *extra]  # fmt: skip
    return main(args)


@pytest.fixture(scope="session")
def tuned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A noise-free TPE session whose budget covers SPACE (stock and 8 candidates), then 4
    confirmation pairs. How many candidates TPE needs on larger spaces: bench/tune_search.py."""
    root = tmp_path_factory.mktemp("tuned")
    assert run_tune(root, "--max-candidates", "9", "--confirm-pairs", "4", "--budget", "10m") == 0
    return root / "out"


def search_log(out: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((out / "evidence" / "search-log.json").read_text())
    return data
