"""The recipe package: models, loading, evidence, statistics and claim rules."""

from servekit.package.load import LoadedPackage, load_package
from servekit.package.models import Package
from servekit.package.rules import RULES, CheckReport, FigureResult, check, check_package, enforce
from servekit.package.schema import package_json_schema

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
