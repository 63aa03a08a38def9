"""Sign a statement into a DSSE envelope; verify an envelope against a trust store.

Verification works on the stored bytes: the payload is base64-decoded from the
envelope and its signature checked over PAE(payloadType, payload). The statement
is parsed only after that, and never re-serialized.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from servekit.errors import SignatureError, SubjectMismatchError, UntrustedKeyError
from servekit.receipts.canonical import is_canonical
from servekit.receipts.dsse import (
    Envelope,
    Signature,
    b64decode,
    b64encode,
    decode_envelope,
    encode_envelope,
    non_canonical,
    pae,
    strict_json,
)
from servekit.receipts.formats import PAYLOAD_TYPE, PREDICATE_TYPE, STATEMENT_TYPE
from servekit.receipts.keys import SigningKey, TrustStore
from servekit.receipts.models import Statement
from servekit.seams import validating, validation_problems


def sign_payload(payload: bytes, key: SigningKey) -> bytes:
    """A DSSE envelope (canonical JSON bytes) holding ``payload`` signed by ``key``."""
    signature = key.sign(pae(PAYLOAD_TYPE, payload))
    return encode_envelope(
        PAYLOAD_TYPE, payload, [Signature(keyid=key.public.key_id, sig=b64encode(signature))]
    )


@dataclass(frozen=True)
class VerifiedPayload:
    """A payload whose signature verified, and the trusted key that made it."""

    payload: bytes
    key_id: str


def require_trust(trust: TrustStore) -> None:
    """Refuse an empty trust store: verifying against no key proves nothing."""
    if not trust.keys:
        raise SignatureError(
            "the trust store holds no key, so nothing can be verified",
            file=trust.source,
            expected="at least one trusted Ed25519 public key (PEM)",
            actual="0 keys",
            hint="pass the publisher's servekit.pub (or a directory of *.pub files) with --trust",
        )


def _verifying_key(envelope: Envelope, trust: TrustStore) -> str | None:
    message = pae(envelope.payload_type, envelope.payload_bytes)
    for sig in envelope.signatures:
        for key_id, key in sorted(trust.keys.items(), key=lambda kv: kv[0] != sig.keyid):
            if key.verify(b64decode(sig.sig), message):
                return key_id
    return None


def _refusal(envelope: Envelope, trust: TrustStore, file: str) -> SignatureError:
    claimed = sorted({s.keyid for s in envelope.signatures})
    if any(k in trust.keys for k in claimed):
        return SignatureError(
            "the receipt's signature does not verify: its payload or signature was changed",
            file=file,
            expected="an Ed25519 signature over PAE(payloadType, payload) by a trusted key",
            actual=f"an invalid signature claiming key {', '.join(claimed)}",
            hint="do not deploy this kit; obtain it again from the publisher",
        )
    return UntrustedKeyError(
        "the receipt is signed by a key that is not in the trust store",
        file=file,
        expected=f"a signature by one of {', '.join(trust.key_ids)}",
        actual=f"signed by {', '.join(claimed) or 'an unnamed key'}",
        hint="if you trust this publisher, add their servekit.pub to the trust store "
        "(compare its key id with the one they publish)",
    )


def verify_envelope(data: bytes, trust: TrustStore, *, file: str) -> VerifiedPayload:
    """Check the envelope's signature against ``trust``; an empty trust store fails."""
    require_trust(trust)
    envelope = decode_envelope(data, file=file)
    if envelope.payload_type != PAYLOAD_TYPE:
        raise SignatureError(
            "the receipt has the wrong payload type",
            file=file,
            expected=PAYLOAD_TYPE,
            actual=envelope.payload_type,
        )
    key_id = _verifying_key(envelope, trust)
    if key_id is None:
        raise _refusal(envelope, trust, file)
    if envelope.signatures[0].keyid != key_id:
        raise non_canonical(file, f"keyid {key_id} (the signer)", envelope.signatures[0].keyid)
    return VerifiedPayload(payload=envelope.payload_bytes, key_id=key_id)


def _statement_mismatch(field: str, expected: str, actual: str, file: str) -> SubjectMismatchError:
    return SubjectMismatchError(
        f"the receipt's statement has an unexpected {field}",
        file=file,
        expected=expected,
        actual=actual,
    )


def _json_object(payload: bytes, file: str) -> dict[str, Any]:
    try:
        obj = strict_json(payload, file=file)
    except ValueError as exc:
        raise _statement_mismatch("encoding", "a JSON object", str(exc), file) from exc
    if not isinstance(obj, dict):
        raise _statement_mismatch("encoding", "a JSON object", type(obj).__name__, file)
    if not is_canonical(payload, obj):
        raise non_canonical(file, "an RFC 8785 canonical JSON payload", "another serialization")
    return obj


def read_statement(verified: VerifiedPayload, *, file: str) -> Statement:
    """Parse a verified payload: its types first, then the predicate."""
    obj = _json_object(verified.payload, file)
    for field, expected in (("_type", STATEMENT_TYPE), ("predicateType", PREDICATE_TYPE)):
        if obj.get(field) != expected:
            raise _statement_mismatch(field, expected, repr(obj.get(field)), file)
    shape = "servekit receipt predicate v1"
    with validating(
        lambda exc: _statement_mismatch("shape", shape, validation_problems(exc), file)
    ):
        statement = Statement.model_validate(obj)
    if statement.predicate.publisher_key_id != verified.key_id:
        raise SignatureError(
            "the receipt names another publisher key than the one that signed it",
            file=file,
            expected=verified.key_id,
            actual=statement.predicate.publisher_key_id,
        )
    return statement
