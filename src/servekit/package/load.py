"""Load a package directory: parse ``package.yaml``, validate it, check its files exist.

Steps:
  1-2. parse the YAML through :func:`servekit.seams.parse_yaml` (no anchors or aliases,
     no duplicate keys, bounded depth, every value error with its line);
  3. validate against :class:`~servekit.package.models.Package`;
  4. check every path it names exists inside the directory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import ValidationError

from servekit.errors import PackageError, PackageFileError, PackageSchemaError, SchemaProblem
from servekit.package.files import PACKAGE_FILE, Role, check_distinct_runs, package_files
from servekit.package.models import Package
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
    """A validated package and the directory it was loaded from."""

    root: Path
    package: Package

    def path(self, relative: str) -> Path:
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


def _check_files(root: Path, package: Package) -> None:
    resolved_root = root.resolve()
    for field, relative in referenced_files(package):
        target = (root / relative).resolve()
        if not target.is_relative_to(resolved_root):
            raise PackageFileError(
                f"{field} points outside the package directory: {relative}",
                path=root / PACKAGE_FILE,
                hint="every file a package names must live inside its directory",
            )
        if not target.is_file():
            raise PackageFileError(
                f"{field} names a file that does not exist: {relative}",
                path=root / PACKAGE_FILE,
                hint=f"add {root / relative} or correct the path",
            )


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
    package = parse_package(manifest, text)
    check_distinct_runs(package, manifest)
    _check_files(root, package)
    return LoadedPackage(root=root, package=package)
