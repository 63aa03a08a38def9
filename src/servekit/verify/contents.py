"""Reading a kit's package once the kit is read: shared by the verifier, replay and the
feed check."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from servekit.errors import FileChangedError, MissingFileError
from servekit.package.files import PACKAGE_FILE, package_sources
from servekit.package.load import LoadedPackage, loaded_from, parse_package
from servekit.package.models import Package
from servekit.package.source import MemorySource
from servekit.verify.archive import KitContents


def kit_package(kit: KitContents) -> Package:
    """The kit's ``package.yaml``, parsed and validated (its bytes are checked by
    ``verify_kit``; this only reads them)."""
    data = kit.get(PACKAGE_FILE)
    if data is None:
        raise MissingFileError(
            "the kit holds no package.yaml", file=PACKAGE_FILE, expected="present", actual="absent"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileChangedError(
            "package.yaml is not UTF-8 text", file=PACKAGE_FILE, expected="UTF-8", actual=str(exc)
        ) from exc
    return parse_package(Path(PACKAGE_FILE), text)


def kit_source(files: Mapping[str, bytes], package: Package) -> MemorySource:
    """The kit's package files at the paths ``package.yaml`` names (the inverse of where
    ``kit build`` put them), in memory; messages name each by its path inside the kit."""
    sources = [(kit_path, relative) for kit_path, relative in package_sources(package)]
    return MemorySource(
        files={relative: files[kit_path] for kit_path, relative in sources if kit_path in files},
        names={relative: kit_path for kit_path, relative in sources},
    )


def kit_loaded(files: Mapping[str, bytes], package: Package) -> LoadedPackage:
    """``package`` (parsed from the kit's ``package.yaml``) reading its files from ``files``."""
    return loaded_from(package, kit_source(files, package))
