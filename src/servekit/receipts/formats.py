"""Format constants shared by the kit builder and the kit verifier.

The verifier must work without the builder, so the formats both sides must agree on
live here: the in-toto and DSSE type strings, the predicate type, the manifest format
and subject names. Where files live in a package and a kit is the inventory's
(:mod:`servekit.package.files`).
"""

from __future__ import annotations

from typing import Final

STATEMENT_TYPE: Final = "https://in-toto.io/Statement/v1"
PAYLOAD_TYPE: Final = "application/vnd.in-toto+json"
PREDICATE_TYPE: Final = "https://servekit.dev/receipt/v1"
MANIFEST_FORMAT: Final = "servekit-manifest/v1"
DIGEST_ALGORITHM: Final = "sha256"

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
