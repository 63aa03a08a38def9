"""DSSE envelopes (Dead Simple Signing Envelope, v1.0.x).

The signature covers the pre-authentication encoding (PAE) of the payload type and
the exact payload bytes::

    PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body

where LEN is the byte length in ASCII decimal and SP one space. The envelope is
JSON ``{"payload": b64, "payloadType": type, "signatures": [{"keyid", "sig": b64}]}``
with standard base64 (RFC 4648 section 4, padded). servekit writes the envelope as
canonical JSON too, so a kit's bytes are reproducible.
"""

from __future__ import annotations

import base64
import binascii
import json

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from servekit.errors import SignatureError
from servekit.receipts.canonical import canonical_json


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


def decode_envelope(data: bytes, *, file: str) -> Envelope:
    """Parse envelope bytes, checking that payload and signatures are strict base64."""
    try:
        envelope = Envelope.model_validate(json.loads(data))
        envelope.payload_bytes  # noqa: B018 - validates the base64 now, not later
        for s in envelope.signatures:
            b64decode(s.sig)
    except (ValueError, ValidationError, binascii.Error, UnicodeEncodeError) as exc:
        raise _bad_envelope(file, str(exc).splitlines()[0]) from exc
    return envelope
