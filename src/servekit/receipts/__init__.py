"""Receipts: canonical bytes, the DSSE/in-toto envelope, Ed25519 keys, sign and verify.

A receipt is an in-toto Statement v1 (``https://in-toto.io/Statement/v1``) whose
predicate is servekit's versioned receipt predicate, serialized as RFC 8785
canonical JSON and wrapped in a DSSE envelope signed with pure Ed25519.
docs/kit.md specifies the format well enough to verify it in another language.
"""

from servekit.receipts.formats import PAYLOAD_TYPE, PREDICATE_TYPE, STATEMENT_TYPE
from servekit.receipts.keys import PublicKey, SigningKey, TrustStore

__all__ = [
    "PAYLOAD_TYPE",
    "PREDICATE_TYPE",
    "STATEMENT_TYPE",
    "PublicKey",
    "SigningKey",
    "TrustStore",
]
