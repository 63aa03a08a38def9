"""A package's own target predicted beside its measured floor; contradictions flagged."""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from servekit.catalog.cards import build_card
from servekit.fit import package_fit
from servekit.fit.package import options_for
from servekit.package import check, load_package
from tests.functional.helpers import EXAMPLES


def _copy(tmp_path: Path, name: str) -> Path:
    return Path(shutil.copytree(EXAMPLES / name, tmp_path / name))


def test_the_llama_example_floor_agrees_with_its_prediction() -> None:
    loaded = load_package(EXAMPLES / "llama-850m-h200")
    fit = package_fit(loaded)
    assert fit is not None
    assert fit.floor_gib == 1.59
    assert fit.contradiction is None
    assert abs(fit.result.weights_bytes_per_gpu / 2**30 - 1.589) < 0.001
    assert fit.result.gpu.name == "H200" and fit.result.fits


def test_a_floor_off_by_more_than_the_stated_error_is_flagged(tmp_path: Path) -> None:
    root = _copy(tmp_path, "llama-850m-h200")
    data = yaml.safe_load((root / "package.yaml").read_text())
    data["hardware"]["floor"]["weights_per_gpu_gib"] = 1.70  # 7 % above the prediction
    (root / "package.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    fit = package_fit(load_package(root))
    assert fit is not None and fit.contradiction is not None
    assert "6.5 % below the measured floor of 1.70 GiB" in fit.contradiction
    assert "stated 3 %" in fit.contradiction


def test_serve_arguments_give_the_layout() -> None:
    options = options_for(load_package(EXAMPLES / "kimi-k3-8xb300"))
    assert (options.gpu, options.parallelism.tp, options.parallelism.ep) == ("B300", 8, True)
    assert options.max_model_len == 40960


def test_without_a_config_there_is_no_prediction_and_the_card_says_so() -> None:
    loaded = load_package(EXAMPLES / "kimi-k3-8xb300")
    assert package_fit(loaded) is None
    card = build_card(loaded, check(loaded))
    assert card.floor_measured.startswith("175.40 GiB of weights per GPU on 8x B200")
    assert card.floor_predicted.startswith("no prediction")


def test_the_card_shows_both_floors() -> None:
    loaded = load_package(EXAMPLES / "llama-850m-h200")
    card = build_card(loaded, check(loaded))
    assert card.floor_measured.startswith("1.59 GiB")
    assert card.floor_predicted.startswith(
        "1.59 GiB of weights per GPU (config basis); on H200: fits"
    )
