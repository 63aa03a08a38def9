"""One entry point for the ``servekit fit`` front end: a model source or a package."""

from __future__ import annotations

from pathlib import Path

from servekit.errors import UsageError
from servekit.fit.models import FitOptions, FitResult
from servekit.fit.package import PackageFit, package_fit
from servekit.fit.predict import predict
from servekit.fit.sources import resolve
from servekit.package.load import load_package
from servekit.weights.hub import Hub


def run(
    source: str | None,
    *,
    options: FitOptions | None,
    package_dir: Path | None = None,
    hub: Hub | None = None,
) -> FitResult | PackageFit:
    """Predict ``source`` under ``options``, or a package's pinned model on its own target.

    With a package, ``source`` may name a local copy of the model (then no Hub call is
    made) and ``options``, when given, replaces the package's own layout.
    """
    if package_dir is None:
        if source is None or options is None:
            raise UsageError(
                "pass a model SOURCE and --gpu, or --package PKG_DIR",
                hint="e.g. servekit fit ./model --gpu H200 --tp 8",
            )
        return predict(resolve(source, hub=hub), options)
    model_dir = Path(source) if source is not None else None
    client = None if model_dir is not None else (hub or Hub())
    fit = package_fit(load_package(package_dir), model_dir=model_dir, hub=client, options=options)
    assert fit is not None  # a model directory or a Hub client always gives a source
    return fit
