"""The one inventory of files: what a package directory and a kit hold, where, and why.

Every module that reads or writes a package or a kit takes its paths from here: the
loader, the kit builder, the receipt, the verifier, the catalog and the weights pin.
A test fails when a module outside this one spells a package or kit path itself.

A package directory::

    package.yaml            the definition (PACKAGE_FILE)
    evidence/               raw per-request records, one file per run (and controls)
    licenses/               the package licence and the base model's licence
    build/                  the engine build recipe
    model/pin.json          the weights pin (``model.files``; the default path)
    model/config.json       a vendored model config, read by ``servekit fit``

A kit holds the package's files at their kit paths (:func:`package_files`), plus what
servekit writes itself (``GENERATED``): a README, the model notice, the build notes,
the deploy files, the manifest and the receipt that signs it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Final

from servekit.errors import PackageFileError
from servekit.package.models import Package

# --- the package directory ---------------------------------------------------------

PACKAGE_FILE: Final = "package.yaml"
PACKAGE_GLOB: Final = f"*/{PACKAGE_FILE}"
"""Package directories one level under a packages folder (the catalog, the demo)."""
EVIDENCE_DIR: Final = "evidence"
LICENSES_DIR: Final = "licenses"
BUILD_DIR: Final = "build"
MODEL_DIR: Final = "model"
PIN_FILE: Final = f"{MODEL_DIR}/pin.json"
"""The weights pin: its default path in a package, and its path in every kit."""
VENDORED_CONFIG: Final = f"{MODEL_DIR}/config.json"
"""A model's ``config.json`` kept in the package, so ``servekit fit`` needs no network."""

# --- files servekit writes into a kit -------------------------------------------------

DEPLOY_DIR: Final = "deploy"
RECEIPT_FILE: Final = "receipt.dsse.json"
MANIFEST_FILE: Final = "MANIFEST"
README_FILE: Final = "README.md"
LAUNCH_FILE: Final = f"{DEPLOY_DIR}/launch.sh"
COMPOSE_FILE: Final = f"{DEPLOY_DIR}/compose.yaml"
K8S_DIR: Final = f"{DEPLOY_DIR}/k8s"
MODEL_NOTICE_FILE: Final = f"{LICENSES_DIR}/MODEL_NOTICE.md"
BUILD_NOTES_FILE: Final = f"{DEPLOY_DIR}/{BUILD_DIR}/BUILD.md"
UNLISTED: Final = frozenset({RECEIPT_FILE, MANIFEST_FILE})
"""Files the manifest does not list: the manifest itself and the receipt that signs it."""
EXECUTABLES: Final = frozenset({LAUNCH_FILE})
"""The only kit files with mode 0755; every other file is 0644."""
GENERATED: Final = frozenset(
    {README_FILE, MODEL_NOTICE_FILE, BUILD_NOTES_FILE, MANIFEST_FILE, RECEIPT_FILE}
)
"""Kit paths servekit writes itself: a package file may never land on one of them."""


def k8s_file(name: str) -> str:
    """Kit path of one Kubernetes manifest, e.g. ``deploy/k8s/service.yaml``."""
    return f"{K8S_DIR}/{name}.yaml"


# --- where package files land in a kit --------------------------------------------


def _under(directory: str, relative: str) -> str:
    return relative if relative.startswith(f"{directory}/") else f"{directory}/{relative}"


def evidence_kit_path(relative: str) -> str:
    """Kit path of an evidence file named in package.yaml (kept under ``evidence/``)."""
    return _under(EVIDENCE_DIR, relative)


def license_kit_path(relative: str) -> str:
    """Kit path of a licence file named in package.yaml (kept under ``licenses/``)."""
    return _under(LICENSES_DIR, relative)


def recipe_kit_path(relative: str) -> str:
    """Kit path of the engine build recipe: ``build/X`` becomes ``deploy/build/X``."""
    return f"{DEPLOY_DIR}/" + _under(BUILD_DIR, relative)


class Role(StrEnum):
    """Why a package holds a file."""

    DEFINITION = "definition"
    RUN_EVIDENCE = "run_evidence"
    CONTROL_EVIDENCE = "control_evidence"
    LICENSE = "license"
    MODEL_LICENSE = "model_license"
    BUILD_RECIPE = "build_recipe"
    WEIGHTS_PIN = "weights_pin"


@dataclass(frozen=True)
class PackageFile:
    """One file a package holds: the field that names it, its role and both paths."""

    field: str  # where package.yaml names it, e.g. ``measurements.runs[0].file``
    role: Role
    path: str  # relative to the package directory
    kit_path: str


def package_files(package: Package) -> tuple[PackageFile, ...]:
    """Every file ``package`` holds, ``package.yaml`` first, each with its kit path."""
    files = [PackageFile("", Role.DEFINITION, PACKAGE_FILE, PACKAGE_FILE)]
    files.append(
        PackageFile("license.file", Role.LICENSE, package.license.file, _lic(package.license.file))
    )
    model_license = package.model.license.file
    files.append(
        PackageFile("model.license.file", Role.MODEL_LICENSE, model_license, _lic(model_license))
    )
    if package.model.files:
        files.append(PackageFile("model.files", Role.WEIGHTS_PIN, package.model.files, PIN_FILE))
    if recipe := package.engine.build_recipe:
        files.append(
            PackageFile("engine.build_recipe", Role.BUILD_RECIPE, recipe, recipe_kit_path(recipe))
        )
    files += _evidence(
        ((f"measurements.runs[{i}].file", r.file) for i, r in enumerate(package.measurements.runs)),
        Role.RUN_EVIDENCE,
    )
    controls = enumerate(package.accuracy.controls)
    files += _evidence(
        ((f"accuracy.controls[{i}].evidence", c.evidence) for i, c in controls if c.evidence),
        Role.CONTROL_EVIDENCE,
    )
    return tuple(files)


def _lic(relative: str) -> str:
    return license_kit_path(relative)


def _evidence(named: Iterable[tuple[str, str]], role: Role) -> list[PackageFile]:
    return [PackageFile(field, role, path, evidence_kit_path(path)) for field, path in named]


def package_sources(package: Package) -> list[tuple[str, str]]:
    """(kit path, path in the package directory) of every package file a kit carries."""
    return [(f.kit_path, f.path) for f in package_files(package)]


def check_distinct_runs(package: Package, definition: Path) -> None:
    """Refuse two runs that name one evidence file: a replicate is its own measurement.

    ``definition`` is the ``package.yaml`` path, for the message.
    """
    seen: dict[str, str] = {}
    for f in package_files(package):
        if f.role is not Role.RUN_EVIDENCE:
            continue
        if f.path in seen:
            raise PackageFileError(
                f"{f.field} names {f.path}, the file of {seen[f.path]} too",
                path=definition,
                hint="give each run its own evidence file from its own measurement",
            )
        seen[f.path] = f.field
