"""DSSE: PAE, the envelope, and a receipt checked by an independent Ed25519 (PyNaCl)."""

from __future__ import annotations

import base64
import json
import tarfile
from typing import Any

import pytest
from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey as NaclSigningKey
from nacl.signing import VerifyKey

from servekit.errors import (
    NonCanonicalReceiptError,
    ReceiptLimitError,
    SignatureError,
    SubjectMismatchError,
    UntrustedKeyError,
)
from servekit.receipts.canonical import canonical_json, nesting_depth
from servekit.receipts.dsse import decode_envelope, pae
from servekit.receipts.keys import PublicKey, SigningKey, TrustStore, generate, load_public_key
from servekit.receipts.signing import read_statement, sign_payload, verify_envelope
from tests.kit.helpers import ASSETS, KEYS

PAYLOAD_TYPE = "application/vnd.in-toto+json"


def test_pae_matches_the_dsse_specification() -> None:
    # The worked example of the DSSE protocol document.
    assert pae("http://example.com/HelloWorld", b"hello world") == (
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )
    assert pae("", b"") == b"DSSEv1 0  0 "


def test_canonical_json_is_rfc8785() -> None:
    assert canonical_json({"b": 1.0, "a": [1e21, 0.1, "é"], "c": None}) == (
        '{"a":[1e+21,0.1,"é"],"b":1,"c":null}'.encode()
    )


def _my_pae(payload_type: bytes, body: bytes) -> bytes:
    """PAE written again here, from the spec, so the check does not trust servekit's."""
    return b" ".join(
        [b"DSSEv1", str(len(payload_type)).encode(), payload_type, str(len(body)).encode(), body]
    )


def _receipt() -> bytes:
    with tarfile.open(ASSETS / "kit_valid.tar.gz") as tar:
        member = tar.extractfile("receipt.dsse.json")
        assert member is not None
        return member.read()


def test_a_kit_receipt_verifies_with_pynacl() -> None:
    envelope = json.loads(_receipt())
    assert envelope["payloadType"] == PAYLOAD_TYPE
    payload = base64.b64decode(envelope["payload"], validate=True)
    (signature,) = envelope["signatures"]
    raw = load_public_key(KEYS / "publisher.pub").raw
    VerifyKey(raw).verify(
        _my_pae(PAYLOAD_TYPE.encode(), payload), base64.b64decode(signature["sig"])
    )
    with pytest.raises(BadSignatureError):
        VerifyKey(raw).verify(
            _my_pae(PAYLOAD_TYPE.encode(), payload + b" "), base64.b64decode(signature["sig"])
        )
    statement = json.loads(payload)
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    assert statement["predicateType"] == "https://servekit.dev/receipt/v1"
    assert canonical_json(statement) == payload, "the signed payload is canonical JSON"


def test_pynacl_signature_verifies_with_servekit() -> None:
    """The other direction: a DSSE envelope made without servekit verifies with it."""
    nacl_key = NaclSigningKey(b"\x07" * 32)
    payload = b'{"hello":"world"}'
    sig = nacl_key.sign(_my_pae(PAYLOAD_TYPE.encode(), payload)).signature
    public = PublicKey.from_raw(bytes(nacl_key.verify_key))
    signature = {"keyid": public.key_id, "sig": base64.b64encode(sig).decode()}
    envelope = {"payload": base64.b64encode(payload).decode(), "payloadType": PAYLOAD_TYPE}
    data = json.dumps({**envelope, "signatures": [signature]}, separators=(",", ":")).encode()
    trust = TrustStore("test", {public.key_id: public})
    assert verify_envelope(data, trust, file="x").payload == payload


def _trust(*keys: SigningKey) -> TrustStore:
    return TrustStore("test", {k.public.key_id: k.public for k in keys})


def test_sign_then_verify_round_trip_and_determinism() -> None:
    key = generate()
    envelope = sign_payload(b"payload", key)
    assert sign_payload(b"payload", key) == envelope, "Ed25519 signing is deterministic"
    verified = verify_envelope(envelope, _trust(key), file="r")
    assert (verified.payload, verified.key_id) == (b"payload", key.public.key_id)


def test_edited_payload_fails_with_signature_error() -> None:
    key = generate()
    envelope = json.loads(sign_payload(b"payload", key))
    envelope["payload"] = base64.b64encode(b"pay1oad").decode()
    with pytest.raises(SignatureError) as info:
        verify_envelope(canonical_json(envelope), _trust(key), file="r")
    assert type(info.value) is SignatureError


def test_unknown_signer_fails_with_untrusted_key_error() -> None:
    signer, trusted = generate(), generate()
    with pytest.raises(UntrustedKeyError) as info:
        verify_envelope(sign_payload(b"payload", signer), _trust(trusted), file="r")
    assert info.value.actual == f"signed by {signer.public.key_id}"
    assert info.value.expected == f"a signature by one of {trusted.public.key_id}"


def test_a_keyid_that_is_not_the_signer_is_refused() -> None:
    """keyid is not signed: letting it vary would give one receipt many hashes."""
    key = generate()
    envelope = json.loads(sign_payload(b"payload", key))
    envelope["signatures"][0]["keyid"] = "somebody-else"
    with pytest.raises(NonCanonicalReceiptError) as info:
        verify_envelope(canonical_json(envelope), _trust(key), file="r")
    assert info.value.actual == "somebody-else"


def _pad_bits(text: str) -> str:
    """The same bytes in base64 with non-zero pad bits (decoders ignore them)."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    last = text.rstrip("=")[-1]
    return text.rstrip("=")[:-1] + alphabet[alphabet.index(last) + 1] + "=" * text.count("=")


@pytest.mark.parametrize(
    "edit",
    [
        lambda e: json.dumps(e).encode(),  # spaces
        lambda e: json.dumps(dict(reversed(e.items())), separators=(",", ":")).encode(),
        lambda e: canonical_json({**e, "payload": _pad_bits(e["payload"])}),
        lambda e: canonical_json({**e, "signatures": [e["signatures"][0]] * 2}),
        lambda e: canonical_json(e)[:-1] + b',"payload":"' + e["payload"].encode() + b'"}',
        lambda e: canonical_json(e) + b"\n",
        lambda e: canonical_json(e).replace(b'"application/vnd.in-toto+json"', b'"\\ud800"'),
        lambda e: canonical_json(e).replace(e["signatures"][0]["keyid"].encode(), b"\\udfff"),
    ],
    ids=[
        "whitespace",
        "key-order",
        "pad-bits",
        "two-signatures",
        "duplicate-key",
        "newline",
        "lone-surrogate-type",
        "lone-surrogate-keyid",
    ],
)
def test_only_the_canonical_envelope_is_accepted(edit: Any) -> None:
    key = generate()
    payload = b"payload"  # 7 bytes: base64 with one '=' of padding, so pad bits exist
    envelope = json.loads(sign_payload(payload, key))
    assert verify_envelope(canonical_json(envelope), _trust(key), file="r").payload == payload
    with pytest.raises(NonCanonicalReceiptError):
        verify_envelope(edit(envelope), _trust(key), file="r")


def test_oversized_and_deep_receipts_are_refused_without_a_traceback() -> None:
    key = generate()
    with pytest.raises(ReceiptLimitError, match="too large"):
        decode_envelope(b" " * (1024 * 1024 + 1), file="r")
    with pytest.raises(ReceiptLimitError, match="nested"):
        decode_envelope(b'{"a":' * 40 + b"1" + b"}" * 40, file="r")
    deep = b'{"a":' * 40 + b"1" + b"}" * 40
    verified = verify_envelope(sign_payload(deep, key), _trust(key), file="r")
    with pytest.raises(ReceiptLimitError, match="nested"):
        read_statement(verified, file="r")


def test_nesting_depth_skips_strings() -> None:
    assert nesting_depth(b'{"a":"' + b"[" * 100 + b'\\\\"}') == 1
    assert nesting_depth(b'[[{"a":[1]}],[]]') == 4


def test_empty_trust_store_is_a_failure() -> None:
    key = generate()
    with pytest.raises(SignatureError, match="holds no key") as info:
        verify_envelope(sign_payload(b"payload", key), TrustStore("empty-dir", {}), file="r")
    assert info.value.file == "empty-dir" and info.value.actual == "0 keys"


@pytest.mark.parametrize(
    "data",
    [
        b"not json",
        b"[]",
        b'{"payload": "!!", "payloadType": "x", "signatures": [{"sig": "AA=="}]}',
        b'{"payload": "AA==", "payloadType": "x", "signatures": []}',
        b'{"payload": "AA==", "payloadType": "x", "signatures": [{"sig": "AA=="}], "extra": 1}',
    ],
)
def test_malformed_envelopes_are_refused(data: bytes) -> None:
    with pytest.raises(SignatureError, match="not a DSSE envelope"):
        decode_envelope(data, file="receipt.dsse.json")


def test_wrong_payload_type_is_refused() -> None:
    key = generate()
    envelope = json.loads(sign_payload(b"payload", key))
    envelope["payloadType"] = "text/plain"
    with pytest.raises(SignatureError, match="wrong payload type"):
        verify_envelope(canonical_json(envelope), _trust(key), file="r")


def test_statement_of_another_type_is_refused() -> None:
    key = generate()
    payload = canonical_json(
        {
            "_type": "https://in-toto.io/Statement/v0.1",
            "subject": [],
            "predicateType": "x",
            "predicate": {},
        }
    )
    verified = verify_envelope(sign_payload(payload, key), _trust(key), file="r")
    with pytest.raises(SubjectMismatchError, match="unexpected _type"):
        read_statement(verified, file="r")


def test_a_non_canonical_payload_is_refused_after_its_signature_verifies() -> None:
    """The signature covers the stored bytes; canonical form then gives them one hash."""
    key = generate()
    payload = b'{ "b": 1,   "a": 2 }'
    verified = verify_envelope(sign_payload(payload, key), _trust(key), file="r")
    assert verified.payload == payload
    with pytest.raises(NonCanonicalReceiptError, match="canonical"):
        read_statement(verified, file="r")
    duplicate = b'{"_type":"a","_type":"b"}'
    verified = verify_envelope(sign_payload(duplicate, key), _trust(key), file="r")
    with pytest.raises(NonCanonicalReceiptError) as info:
        read_statement(verified, file="r")
    assert info.value.actual == "key '_type' twice"
