"""Format constants and kit layout shared by the kit builder and the kit verifier.

The verifier must work without the builder, so everything both sides must agree on
lives here: the in-toto and DSSE type strings, the predicate type, the names of the
kit's fixed files, subject names and where a package's files land in a kit.
"""

from __future__ import annotations

from typing import Final

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
