"""Format constants and kit layout shared by the kit builder and the kit verifier.

The verifier must work without the builder, so everything both sides must agree on
lives here: the in-toto and DSSE type strings, the predicate type, the names of the
kit's fixed files, subject names and where a package's files land in a kit.
"""

from __future__ import annotations

from typing import Final

from servekit.package.models import Package

STATEMENT_TYPE: Final = "https://in-toto.io/Statement/v1"
PAYLOAD_TYPE: Final = "application/vnd.in-toto+json"
PREDICATE_TYPE: Final = "https://servekit.dev/receipt/v1"
MANIFEST_FORMAT: Final = "servekit-manifest/v1"
DIGEST_ALGORITHM: Final = "sha256"

# --- fixed kit files --------------------------------------------------------------

RECEIPT_FILE: Final = "receipt.dsse.json"
MANIFEST_FILE: Final = "MANIFEST"
PACKAGE_FILE: Final = "package.yaml"
PIN_FILE: Final = "model/pin.json"
README_FILE: Final = "README.md"
UNLISTED: Final = frozenset({RECEIPT_FILE, MANIFEST_FILE})
"""Files the manifest does not list: the manifest itself and the receipt that signs it."""
LAUNCH_FILE: Final = "deploy/launch.sh"
EXECUTABLES: Final = frozenset({LAUNCH_FILE})
"""The only kit files with mode 0755; every other file is 0644."""
MODEL_NOTICE_FILE: Final = "licenses/MODEL_NOTICE.md"
BUILD_NOTES_FILE: Final = "deploy/build/BUILD.md"
GENERATED: Final = frozenset(
    {README_FILE, MODEL_NOTICE_FILE, BUILD_NOTES_FILE, MANIFEST_FILE, RECEIPT_FILE}
)
"""Kit paths servekit writes itself: a package file may never land on one of them."""

# --- subjects ---------------------------------------------------------------------

KIT_SUBJECT_PREFIX: Final = "servekit-kit:"
MODEL_SUBJECT_PREFIX: Final = "hf://"


def kit_subject_name(package_id: str, version: str) -> str:
    """Subject name of a kit's content digest, e.g. ``servekit-kit:tiny@1.0.0``."""
    return f"{KIT_SUBJECT_PREFIX}{package_id}@{version}"


def model_subject_name(repo: str, commit: str) -> str:
    """Subject name of a model tree at its commit, e.g. ``hf://org/model@<40 hex>``."""
    return f"{MODEL_SUBJECT_PREFIX}{repo}@{commit}"


def tree_digest_hex(tree_digest: str) -> str:
    """The hex part of a ``sha256:<hex>`` tree digest (subjects carry bare hex)."""
    return tree_digest.removeprefix(f"{DIGEST_ALGORITHM}:")


# --- where package files land in a kit --------------------------------------------


def _under(directory: str, relative: str) -> str:
    return relative if relative.startswith(f"{directory}/") else f"{directory}/{relative}"


def evidence_kit_path(relative: str) -> str:
    """Kit path of an evidence file named in package.yaml (kept under ``evidence/``)."""
    return _under("evidence", relative)


def license_kit_path(relative: str) -> str:
    """Kit path of a licence file named in package.yaml (kept under ``licenses/``)."""
    return _under("licenses", relative)


def recipe_kit_path(relative: str) -> str:
    """Kit path of the engine build recipe: ``build/X`` becomes ``deploy/build/X``."""
    return "deploy/" + _under("build", relative)


def package_sources(package: Package) -> list[tuple[str, str]]:
    """(kit path, path in the package directory) of every package file a kit carries."""
    pairs = [(PACKAGE_FILE, PACKAGE_FILE)]
    pairs += [(evidence_kit_path(r.file), r.file) for r in package.measurements.runs]
    controls = package.accuracy.controls
    pairs += [(evidence_kit_path(c.evidence), c.evidence) for c in controls if c.evidence]
    pairs += [(license_kit_path(f), f) for f in (package.license.file, package.model.license.file)]
    if package.engine.build_recipe:
        recipe = package.engine.build_recipe
        pairs.append((recipe_kit_path(recipe), recipe))
    if package.model.files:
        pairs.append((PIN_FILE, package.model.files))
    return pairs
