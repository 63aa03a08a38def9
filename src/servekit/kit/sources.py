"""The package's own files a kit carries, copied byte for byte to their kit paths.

``package.yaml`` stays at the top; evidence under ``evidence/``, licences under
``licenses/``, the build recipe under ``deploy/build/`` and the file-by-file model
pin at ``model/pin.json`` (see :mod:`servekit.receipts.formats`).
"""

from __future__ import annotations

from servekit.errors import PackageError, PackageFileError
from servekit.package.load import PACKAGE_FILE as PACKAGE_SOURCE
from servekit.package.load import LoadedPackage
from servekit.receipts.formats import (
    PACKAGE_FILE,
    PIN_FILE,
    evidence_kit_path,
    license_kit_path,
    recipe_kit_path,
)


def read_package_file(loaded: LoadedPackage, relative: str) -> bytes:
    """The bytes of a file of the package, or a :class:`PackageFileError`."""
    path = loaded.path(relative)
    try:
        return path.read_bytes()
    except OSError as exc:
        raise PackageFileError(f"cannot read: {exc.strerror}", path=path) from exc


def _sources(loaded: LoadedPackage) -> list[tuple[str, str]]:
    """(kit path, package path) of every file copied into the kit."""
    pkg = loaded.package
    pairs = [(PACKAGE_FILE, PACKAGE_SOURCE)]
    pairs += [(evidence_kit_path(r.file), r.file) for r in pkg.measurements.runs]
    pairs += [
        (evidence_kit_path(c.evidence), c.evidence) for c in pkg.accuracy.controls if c.evidence
    ]
    pairs += [(license_kit_path(f), f) for f in (pkg.license.file, pkg.model.license.file)]
    if pkg.engine.build_recipe:
        pairs.append((recipe_kit_path(pkg.engine.build_recipe), pkg.engine.build_recipe))
    if pkg.model.files:
        pairs.append((PIN_FILE, pkg.model.files))
    return pairs


def copy_sources(loaded: LoadedPackage) -> dict[str, bytes]:
    """Kit path -> bytes of the package's files; two sources may not share a kit path."""
    files: dict[str, bytes] = {}
    origin: dict[str, str] = {}
    for kit_path, relative in _sources(loaded):
        if kit_path in origin and origin[kit_path] != relative:
            raise PackageError(
                f"{origin[kit_path]} and {relative} would both become {kit_path} in the kit",
                hint="rename one of them",
            )
        origin[kit_path] = relative
        files[kit_path] = read_package_file(loaded, relative)
    return files
