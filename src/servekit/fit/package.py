"""The prediction for a package's own hardware target, beside its measured floor.

The layout comes from the package's serve arguments (``--tensor-parallel-size``,
``--enable-expert-parallel``, ``--max-model-len``...), the GPU from
``hardware.target``. The model comes from a directory (or ``config.json``) given by the
caller, or from ``model/config.json`` carried in the package (config basis; no network),
or, when a Hub client is given, from the pinned commit's config and headers. A
placeholder commit is never looked up: it names nothing on the Hub.

A floor claim (``hardware.floor.weights_per_gpu_gib``) is contradicted when the
prediction differs from it by more than the prediction's stated error: 2 % from
headers, 3 % from config alone (docs/fit.md, validated by bench/fit_validation.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from servekit.errors import FitError
from servekit.fit.arch import read_config
from servekit.fit.models import GIB, Basis, FitOptions, FitResult, KvDtype, Parallelism
from servekit.fit.predict import ModelSource, predict
from servekit.fit.sources import from_directory, from_hub
from servekit.package.files import VENDORED_CONFIG
from servekit.package.load import LoadedPackage
from servekit.weights.hub import Hub

STATED_ERROR = {Basis.HEADERS: 0.02, Basis.CONFIG: 0.03}


@dataclass(frozen=True)
class PackageFit:
    """The prediction, the floor the package claims, and whether they disagree."""

    result: FitResult
    floor_gib: float | None
    stated_error: float
    contradiction: str | None

    def as_dict(self) -> dict[str, object]:
        return {
            "prediction": self.result.as_json(),
            "measured_floor_weights_gib": self.floor_gib,
            "stated_error_pct": self.stated_error * 100,
            "contradiction": self.contradiction,
        }


def _flag(args: Sequence[str], name: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None


def options_for(loaded: LoadedPackage) -> FitOptions:
    """The fit options a package's serve arguments and hardware target imply."""
    pkg = loaded.package
    args = pkg.serve.args
    tp = int(_flag(args, "--tensor-parallel-size") or _flag(args, "-tp") or 1)
    layout = Parallelism(
        tp=tp,
        dp=int(_flag(args, "--data-parallel-size") or _flag(args, "-dp") or 1),
        pp=int(_flag(args, "--pipeline-parallel-size") or _flag(args, "-pp") or 1),
        ep="--enable-expert-parallel" in args or "-ep" in args,
    )
    max_len = _flag(args, "--max-model-len")
    util = _flag(args, "--gpu-memory-utilization")
    kv = _flag(args, "--kv-cache-dtype")
    return FitOptions(
        gpu=pkg.hardware.target.gpu,
        parallelism=layout,
        max_model_len=int(max_len) if max_len else pkg.model.context_length,
        gpu_memory_utilization=float(util) if util else 0.92,
        kv_cache_dtype=KvDtype.FP8 if kv and kv.startswith("fp8") else KvDtype.AUTO,
    )


def _source(loaded: LoadedPackage, model_dir: Path | None, hub: Hub | None) -> ModelSource | None:
    """A model directory given by the caller, else the package's own ``model/config.json``
    (no network), else the pinned commit on the Hub, unless that commit is a placeholder."""
    if model_dir is not None:
        return from_directory(model_dir)
    pin = loaded.package.model
    vendored = loaded.path(VENDORED_CONFIG)
    if vendored.is_file():
        return ModelSource(f"{pin.repo}@{pin.commit}", read_config(vendored), None)
    if hub is None:
        return None
    if pin.placeholder_commit:
        raise FitError(
            f"{pin.repo}@{pin.commit} is a placeholder commit, not one on the Hub, and the "
            f"package holds no {VENDORED_CONFIG}: there is nothing to size",
            hint="pass a local copy of the model or its config.json (servekit fit --package "
            f"PKG_DIR MODEL_DIR), or add the model's config.json to the package as {VENDORED_CONFIG}",
        )
    return from_hub(pin.repo, pin.commit, hub=hub)[0]


def _contradiction(result: FitResult, floor: float | None, error: float) -> str | None:
    if floor is None:
        return None
    predicted = result.weights_bytes_per_gpu / GIB
    off = (predicted - floor) / floor
    if abs(off) <= error:
        return None
    return (
        f"the predicted {predicted:.2f} GiB of weights per GPU is {abs(off) * 100:.1f} % "
        f"{'below' if off < 0 else 'above'} the measured floor of {floor:.2f} GiB, more than "
        f"the prediction's stated {error * 100:.0f} % ({result.basis.value} basis): check the "
        "floor's figure and the layout it was measured at"
    )


def package_fit(
    loaded: LoadedPackage,
    *,
    model_dir: Path | None = None,
    hub: Hub | None = None,
    options: FitOptions | None = None,
) -> PackageFit | None:
    """The prediction for ``loaded``'s own target, or None when no model config is at hand.

    ``options`` replaces the layout and GPU the package's serve arguments imply.
    """
    source = _source(loaded, model_dir, hub)
    if source is None:
        return None
    result = predict(source, options or options_for(loaded))
    hardware = loaded.package.hardware
    floor = hardware.floor.weights_per_gpu_gib if hardware.floor else None
    error = STATED_ERROR[result.basis]
    return PackageFit(result, floor, error, _contradiction(result, floor, error))
