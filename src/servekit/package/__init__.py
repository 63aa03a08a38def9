"""The recipe package: models, loading, evidence, statistics and claim rules.

The names below load on first use (PEP 562), so a module that needs only
``servekit.package.models`` or ``servekit.package.files`` does not import the claim
rules and numpy with them (``servekit verify weights`` starts without them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from servekit._lazy import lazy_exports

if TYPE_CHECKING:
    from servekit.package.load import LoadedPackage, load_package
    from servekit.package.models import Package
    from servekit.package.rules import (
        RULES,
        CheckReport,
        FigureResult,
        check,
        check_package,
        enforce,
    )
    from servekit.package.schema import package_json_schema

_HOME = {
    "RULES": "rules",
    "CheckReport": "rules",
    "FigureResult": "rules",
    "LoadedPackage": "load",
    "Package": "models",
    "check": "rules",
    "check_package": "rules",
    "enforce": "rules",
    "load_package": "load",
    "package_json_schema": "schema",
}

__all__ = [
    "RULES",
    "CheckReport",
    "FigureResult",
    "LoadedPackage",
    "Package",
    "check",
    "check_package",
    "enforce",
    "load_package",
    "package_json_schema",
]
__getattr__ = lazy_exports(__name__, _HOME)
