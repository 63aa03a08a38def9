"""The H200 tuning examples: what `servekit tune` of vLLM 0.26.0 published from the device
(docs/gpu-run.md, "servekit tune on the H200"): a refusal, carried by its own evidence."""

from __future__ import annotations

import hashlib
import json

import pytest

from servekit.package import load_package
from servekit.package.evidence import TuneRole, load_evidence
from servekit.weights.pinfile import read_pin
from tests.functional.helpers import ROOT, servekit

PACKAGES = ROOT / "examples" / "packages"
QWEN = PACKAGES / "qwen2.5-7b-dummy-vllm-tune-h200"
SMOL = PACKAGES / "smollm2-135m-vllm-tune-h200"


@pytest.mark.parametrize("example", [QWEN, SMOL], ids=lambda p: p.name)
def test_check_passes_with_no_figure_and_no_speedup(example: object) -> None:
    result = servekit("package", "check", str(example), "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["figures"] == [] and report["violations"] == []


@pytest.mark.parametrize("example", [QWEN, SMOL], ids=lambda p: p.name)
def test_the_one_run_is_the_searchs_stock_run_on_vllm_and_the_budget_explains_the_rest(
    example: object,
) -> None:
    loaded = load_package(example)  # type: ignore[arg-type]
    [run] = loaded.package.measurements.runs
    assert not run.current  # a selection run: retracted from figures (SK140)
    header = load_evidence(loaded.path(run.file)).header
    assert (header.engine_name, header.engine_version) == ("vllm", "0.26.0")
    assert header.simulator is False and header.tune is not None
    assert header.tune.role is TuneRole.SELECTION and header.tune.candidate == "stock"
    assert header.serve is not None and "--enforce-eager" in header.serve.argv
    assert header.serve.env == {"VLLM_USE_FLASHINFER_SAMPLER": "0"}
    log = json.loads(loaded.path("evidence/search-log.json").read_text())
    [stock] = log["candidates"]
    # the budget rule: a candidate and 4 confirmation pairs are 9 more starts at this cost
    assert stock["seconds"] * 10 > log["budget_s"]


def test_the_dummy_package_pins_the_config_only_tree_it_ran() -> None:
    loaded = load_package(QWEN)
    pin = read_pin(QWEN / "model" / "pin.json")
    assert [f.path for f in pin.files] == ["config.json"]
    config = (QWEN / "model" / "config.json").read_bytes()
    assert pin.files[0].sha256 == hashlib.sha256(config).hexdigest()
    assert pin.tree_digest == loaded.package.model.tree_digest
    [run] = loaded.package.measurements.runs
    argv = load_evidence(loaded.path(run.file)).header.serve.argv  # type: ignore[union-attr]
    assert argv[argv.index("--load-format") + 1] == "dummy"
    assert loaded.package.accuracy.method.value == "not_applicable"
    assert "random" in " ".join(d.text for d in loaded.package.disclosures)


def test_the_smollm2_package_pins_the_converted_checkpoint_of_the_vllm_package() -> None:
    tuned = read_pin(SMOL / "model" / "pin.json")
    converted = read_pin(PACKAGES / "smollm2-135m-vllm-h200" / "model" / "converted-pin.json")
    assert tuned.tree_digest == converted.tree_digest
