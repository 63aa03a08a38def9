"""The package's own files a kit carries, copied byte for byte to their kit paths.

``package.yaml`` stays at the top; evidence under ``evidence/``, licences under
``licenses/``, the build recipe under ``deploy/build/`` and the file-by-file model
pin at ``model/pin.json`` (see :mod:`servekit.package.files`).
"""

from __future__ import annotations

from servekit.errors import PackageError, PackageFileError
from servekit.package.files import GENERATED, PACKAGE_FILE, package_sources
from servekit.package.load import LoadedPackage, loaded_from, parse_package
from servekit.package.source import MemorySource
from servekit.receipts.archive import NAME_BYTES
from servekit.seams import ReadFailure, reading


def read_package_file(loaded: LoadedPackage, relative: str) -> bytes:
    """The bytes of a file of the package, through its source (its directory, or memory
    once :func:`snapshot` has read it), or a :class:`PackageFileError`."""
    with reading(loaded.source.where(relative), _unreadable):
        return loaded.source.read_bytes(relative)


def snapshot(loaded: LoadedPackage) -> LoadedPackage:
    """``loaded`` with every file the kit carries read once into memory.

    The claim rules, the receipt and the archive then see the same bytes: a file changed
    on disk while a kit is built (an editor saving, a benchmark still writing) cannot ship
    other bytes than were checked. Messages still name the files by their paths on disk.
    ``package.yaml`` read again must be the package already parsed, or the build stops.
    """
    relatives = [relative for _, relative in package_sources(loaded.package)]
    files = {relative: read_package_file(loaded, relative) for relative in relatives}
    where = loaded.source.where(PACKAGE_FILE)
    changed = PackageError(
        f"{where} changed while the kit was built: the file read for the kit is not the "
        "one first loaded",
        hint="build again once nothing is writing to the package directory",
    )
    try:
        package = parse_package(where, files[PACKAGE_FILE].decode("utf-8"))
    except (PackageError, UnicodeDecodeError) as exc:  # the new content does not even load
        raise changed from exc
    if package != loaded.package:
        raise changed
    names = {relative: str(loaded.source.where(relative)) for relative in relatives}
    return loaded_from(package, MemorySource(files, names))


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
