"""DSSE envelopes (Dead Simple Signing Envelope, v1.0.x).

The signature covers the pre-authentication encoding (PAE) of the payload type and
the exact payload bytes::

    PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body

where LEN is the byte length in ASCII decimal and SP one space. The envelope is
JSON ``{"payload": b64, "payloadType": type, "signatures": [{"keyid", "sig": b64}]}``
with standard base64 (RFC 4648 section 4, padded). servekit writes the envelope as
canonical JSON too, so a kit's bytes are reproducible, and reads back only those exact
bytes: one signature, canonical base64 and JSON, no duplicate key. A receipt therefore
has exactly one sha256, which a revocation feed can key on.
"""

from __future__ import annotations

import base64
import binascii

from pydantic import BaseModel, ConfigDict, Field

from servekit.errors import NonCanonicalReceiptError, ReceiptLimitError, SignatureError
from servekit.receipts.canonical import (
    MAX_DEPTH,
    DuplicateKeyError,
    canonical_json,
    nesting_depth,
    strict_loads,
)
from servekit.seams import parsing, problem_text

MAX_RECEIPT_BYTES = 1024 * 1024
"""A receipt is a few kilobytes; a megabyte leaves room for hundreds of figures."""


def pae(payload_type: str, payload: bytes) -> bytes:
    """The DSSE v1 pre-authentication encoding of ``payload_type`` and ``payload``."""
    kind = payload_type.encode("utf-8")
    return b"DSSEv1 %d %b %d %b" % (len(kind), kind, len(payload), payload)


class Signature(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    keyid: str = ""
    sig: str


class Envelope(BaseModel):
    """A parsed envelope. ``payload_bytes`` is what was signed (with its type, via PAE)."""

    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)

    payload: str
    payload_type: str = Field(alias="payloadType")
    signatures: tuple[Signature, ...] = Field(min_length=1)

    @property
    def payload_bytes(self) -> bytes:
        return b64decode(self.payload)


def b64encode(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def b64decode(text: str) -> bytes:
    """Strict standard base64 (raises ``binascii.Error`` on anything else)."""
    return base64.b64decode(text.encode("ascii"), validate=True)


def encode_envelope(payload_type: str, payload: bytes, signatures: list[Signature]) -> bytes:
    """Envelope bytes (canonical JSON) for ``payload`` and its signatures."""
    return canonical_json(
        {
            "payload": b64encode(payload),
            "payloadType": payload_type,
            "signatures": [{"keyid": s.keyid, "sig": s.sig} for s in signatures],
        }
    )


def _bad_envelope(file: str, actual: str) -> SignatureError:
    return SignatureError(
        "the receipt is not a DSSE envelope",
        file=file,
        expected='JSON {"payload", "payloadType", "signatures": [{"keyid", "sig"}]} in base64',
        actual=actual,
        hint="the receipt was edited or damaged; obtain the kit again from the publisher",
    )


def _limit(file: str, expected: str, actual: str) -> ReceiptLimitError:
    return ReceiptLimitError(
        "the receipt is too large or too deeply nested to read",
        file=file,
        expected=expected,
        actual=actual,
        hint="no receipt servekit writes is; do not use this kit",
    )


def non_canonical(file: str, expected: str, actual: str) -> NonCanonicalReceiptError:
    """The refusal of a receipt that is not byte for byte what ``kit build`` writes."""
    return NonCanonicalReceiptError(
        "the receipt is not in its one canonical form",
        file=file,
        expected=expected,
        actual=actual,
        hint="the receipt was re-encoded after signing; obtain the kit again from the publisher",
    )


def strict_json(data: bytes, *, file: str) -> object:
    """JSON bounded in size and depth, without duplicate keys."""
    if len(data) > MAX_RECEIPT_BYTES:
        raise _limit(file, f"<= {MAX_RECEIPT_BYTES} bytes", f"{len(data)} bytes")
    if nesting_depth(data, stop=MAX_DEPTH) > MAX_DEPTH:
        raise _limit(file, f"nesting <= {MAX_DEPTH} levels", f"more than {MAX_DEPTH} levels")
    try:
        return strict_loads(data)
    except DuplicateKeyError as exc:
        raise non_canonical(file, "each key once per object", f"key {exc.key!r} twice") from exc


def _parse(data: bytes, file: str) -> Envelope:
    with parsing(
        lambda exc: _bad_envelope(file, problem_text(exc)),
        ValueError,
        binascii.Error,
        UnicodeEncodeError,
    ):
        envelope = Envelope.model_validate(strict_json(data, file=file))
        envelope.payload_bytes  # noqa: B018 - validates the base64 now, not later
        for s in envelope.signatures:
            b64decode(s.sig)
    return envelope


def decode_envelope(data: bytes, *, file: str) -> Envelope:
    """Parse envelope bytes; refuse any form but the one :func:`encode_envelope` writes."""
    envelope = _parse(data, file)
    if len(envelope.signatures) != 1:
        raise non_canonical(file, "exactly one signature", f"{len(envelope.signatures)}")
    try:
        again = encode_envelope(
            envelope.payload_type, envelope.payload_bytes, [*envelope.signatures]
        )
    except ValueError as exc:  # e.g. a lone surrogate (\ud800): no UTF-8 form, so no canonical one
        raise non_canonical(file, "text that has a UTF-8 form", str(exc)) from exc
    if again != data:
        raise non_canonical(
            file,
            "canonical JSON with canonical padded base64 (zero pad bits)",
            f"{len(data)} bytes that re-encode to {len(again)} different bytes",
        )
    return envelope
