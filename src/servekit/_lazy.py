"""Re-exports that load on first use (PEP 562), for the packages a script imports from.

``servekit.verify``, ``servekit.kit``, ``servekit.store`` and ``servekit.package`` list
what a script needs in ``__all__``; each name is imported from its module only when it is
first read, so importing one module of a package (``servekit.verify.weights``) does not
load its siblings (the kit verifier) with it.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``homes`` maps each name to its module."""

    def load(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{homes[name]}"), name)
        setattr(sys.modules[package], name, value)  # read once, then a plain attribute
        return value

    return load
