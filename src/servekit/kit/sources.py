"""The package's own files a kit carries, copied byte for byte to their kit paths.

``package.yaml`` stays at the top; evidence under ``evidence/``, licences under
``licenses/``, the build recipe under ``deploy/build/`` and the file-by-file model
pin at ``model/pin.json`` (see :mod:`servekit.package.files`).
"""

from __future__ import annotations

from servekit.errors import PackageError, PackageFileError
from servekit.package.files import GENERATED, package_sources
from servekit.package.load import LoadedPackage
from servekit.receipts.archive import NAME_BYTES
from servekit.seams import ReadFailure, read_bytes


def read_package_file(loaded: LoadedPackage, relative: str) -> bytes:
    """The bytes of a file of the package, or a :class:`PackageFileError`."""
    path = loaded.path(relative)
    return read_bytes(path, _unreadable)


def _unreadable(failure: ReadFailure) -> PackageFileError:
    strerror = failure.exc.strerror if isinstance(failure.exc, OSError) else failure.reason
    return PackageFileError(f"cannot read: {strerror}", path=failure.path)


def _reserved(kit_path: str, relative: str) -> PackageError:
    return PackageError(
        f"{relative} would become {kit_path} in the kit, a path servekit writes itself",
        hint="rename the file: README.md, MANIFEST, the receipt, licenses/MODEL_NOTICE.md and "
        "deploy/build/BUILD.md are generated and a package file may never replace one",
    )


_GENERATED_FOLDED = frozenset(path.casefold() for path in GENERATED)


def copy_sources(loaded: LoadedPackage) -> dict[str, bytes]:
    """Kit path -> bytes of the package's files; two sources may not share a kit path,
    not even one that differs only in case (the verifier refuses such a kit: one file would
    overwrite the other on a case-insensitive disk)."""
    files: dict[str, bytes] = {}
    origin: dict[str, str] = {}
    folded: dict[str, str] = {}
    for kit_path, relative in package_sources(loaded.package):
        if kit_path.casefold() in _GENERATED_FOLDED:
            raise _reserved(kit_path, relative)
        if len(kit_path.encode("utf-8")) > NAME_BYTES:
            raise PackageError(
                f"{relative} would become {kit_path} in the kit, longer than {NAME_BYTES} bytes",
                hint="shorten the file name: a kit path must fit one tar header, since kits "
                "never carry the extended headers a verifier refuses",
            )
        if kit_path in origin and origin[kit_path] != relative:
            raise PackageError(
                f"{origin[kit_path]} and {relative} would both become {kit_path} in the kit",
                hint="rename one of them",
            )
        twin = folded.setdefault(kit_path.casefold(), kit_path)
        if twin != kit_path:
            raise PackageError(
                f"{origin[twin]} and {relative} become {twin} and {kit_path} in the kit, "
                "one file on a case-insensitive disk",
                hint="rename one of them",
            )
        origin[kit_path] = relative
        files[kit_path] = read_package_file(loaded, relative)
    return files
