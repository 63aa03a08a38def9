"""servekit: verified serving recipes for open models."""

from __future__ import annotations

__all__ = ["__version__"]


def __getattr__(name: str) -> str:
    """``__version__``, read from the installed metadata on first use (importing
    ``importlib.metadata`` costs tens of milliseconds that `servekit --help` need not pay)."""
    if name != "__version__":
        raise AttributeError(f"module 'servekit' has no attribute {name!r}")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("servekit")
    except PackageNotFoundError:  # running from a source tree without an install
        return "0.0.0+unknown"
