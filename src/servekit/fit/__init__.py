"""The hardware floor, predicted: will a model fit these GPUs, before anyone downloads it.

``predict`` sizes the weights per GPU under vLLM's sharding rules (from the
safetensors headers, or estimated from ``config.json``), the KV cache per token, and
what the engine leaves for it; ``package_fit`` does so for a package's own target.
"""

from servekit.fit.models import Basis, FitOptions, FitResult, KvDtype, Parallelism
from servekit.fit.package import PackageFit, package_fit
from servekit.fit.predict import ModelSource, predict
from servekit.fit.sources import from_directory, from_hub, resolve

__all__ = [
    "Basis",
    "FitOptions",
    "FitResult",
    "KvDtype",
    "ModelSource",
    "PackageFit",
    "Parallelism",
    "from_directory",
    "from_hub",
    "package_fit",
    "predict",
    "resolve",
]
