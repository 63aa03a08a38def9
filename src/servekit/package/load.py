"""Load a package directory: parse ``package.yaml``, validate it, check its files exist.

Steps:
  1-2. parse the YAML through :func:`servekit.seams.parse_yaml` (no anchors or aliases,
     no duplicate keys, bounded depth, every value error with its line);
  3. validate against :class:`~servekit.package.models.Package`;
  4. check every path it names exists inside the directory.

The files are read through a :class:`~servekit.package.source.FileSource`: a directory
(:func:`load_package`), or the verified bytes of a kit (:func:`loaded_from`, which
``verify kit`` calls with the package it parsed from those bytes).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import ValidationError

from servekit.errors import PackageError, PackageFileError, PackageSchemaError, SchemaProblem
from servekit.package.files import PACKAGE_FILE, Role, check_distinct_runs, package_files
from servekit.package.models import Package
from servekit.package.source import DirectorySource, FileSource
from servekit.seams import (
    ReadFailure,
    YamlErrorFactory,
    field_problems,
    parse_yaml,
    read_utf8,
    validating,
)


@dataclass(frozen=True)
class LoadedPackage:
    """A validated package and the source its files are read from."""

    package: Package
    source: FileSource

    @property
    def root(self) -> Path:
        """The package directory (only a package loaded from one has it)."""
        if not isinstance(self.source, DirectorySource):
            raise TypeError(f"{self.package.id} was loaded from memory, not from a directory")
        return self.source.root

    def path(self, relative: str) -> Path:
        """A file's path in the package directory (see :attr:`root`)."""
        return self.root / relative


def _line_of(node: yaml.Node, loc: tuple[int | str, ...]) -> int | None:
    """The line of the deepest node along ``loc`` (1-based)."""
    current = node
    for part in loc:
        child: yaml.Node | None = None
        if isinstance(current, yaml.MappingNode):
            child = next((v for k, v in current.value if k.value == part), None)
            if child is None:  # unknown or missing field: point at the mapping
                break
        elif isinstance(current, yaml.SequenceNode) and isinstance(part, int):
            if part >= len(current.value):
                break
            child = current.value[part]
        else:
            break
        current = child
    return current.start_mark.line + 1


def _problems(node: yaml.Node, exc: ValidationError) -> list[SchemaProblem]:
    return [
        SchemaProblem(
            field=p.field or "(top level)", message=p.sentence, line=_line_of(node, p.loc)
        )
        for p in field_problems(exc)
    ]


def _file_error(path: Path) -> YamlErrorFactory:
    def error(message: str, line: int | None, hint: str) -> PackageFileError:
        return PackageFileError(message, path=path, line=line, hint=hint)

    return error


def parse_package(path: Path, text: str) -> Package:
    """Parse and validate ``package.yaml`` text; ``path`` is used in messages."""
    data, node = parse_yaml(text, _file_error(path))
    if node is None:
        raise PackageFileError("the file is empty", path=path, hint="see examples/packages/")
    if not isinstance(data, dict):
        raise PackageFileError(
            "the top level must be a mapping of fields", path=path, line=1, hint="see examples/"
        )
    with validating(lambda exc: PackageSchemaError(path=path, problems=_problems(node, exc))):
        return Package.model_validate(data)


def referenced_files(package: Package) -> list[tuple[str, str]]:
    """(field, relative path) for every file the package names (from the inventory)."""
    return [(f.field, f.path) for f in package_files(package) if f.role is not Role.DEFINITION]


def _check_files(source: FileSource, package: Package) -> None:
    for field, relative in referenced_files(package):
        if source.inside(relative) is None:
            raise PackageFileError(
                f"{field} points outside the package directory: {relative}",
                path=source.where(PACKAGE_FILE),
                hint="every file a package names must live inside its directory",
            )
        if not source.is_file(relative):
            raise PackageFileError(
                f"{field} names a file that does not exist: {relative}",
                path=source.where(PACKAGE_FILE),
                hint=f"add {source.where(relative)} or correct the path",
            )


def loaded_from(package: Package, source: FileSource) -> LoadedPackage:
    """A parsed ``package`` whose files are read from ``source``, once it is known that
    its runs name distinct files and that every file it names is there (step 4)."""
    check_distinct_runs(package, source.where(PACKAGE_FILE))
    _check_files(source, package)
    return LoadedPackage(package=package, source=source)


def _unreadable(failure: ReadFailure) -> PackageFileError:
    if failure.missing:
        hint = "create it; see examples/packages/"
        return PackageFileError("package.yaml not found", path=failure.path, hint=hint)
    return PackageFileError(f"cannot read: {failure.exc}", path=failure.path)


def load_package(directory: Path | str) -> LoadedPackage:
    """Load and validate a package directory (raises :class:`PackageError`)."""
    root = Path(directory)
    if not root.is_dir():
        raise PackageError(
            f"{root}: not a package directory",
            hint="pass the directory that holds package.yaml, evidence/, licenses/ and build/",
        )
    manifest = root / PACKAGE_FILE
    text = read_utf8(manifest, _unreadable)
    return loaded_from(parse_package(manifest, text), DirectorySource(root))
