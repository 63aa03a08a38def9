"""DSSE: PAE, the envelope, and a receipt checked by an independent Ed25519 (PyNaCl)."""

from __future__ import annotations

import base64
import json
import tarfile
from pathlib import Path

import pytest
from nacl.exceptions import BadSignatureError
from nacl.signing import SigningKey as NaclSigningKey
from nacl.signing import VerifyKey

from servekit.errors import SignatureError, SubjectMismatchError, UntrustedKeyError
from servekit.receipts.canonical import canonical_json
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
    signature = {"keyid": "", "sig": base64.b64encode(sig).decode()}
    envelope = {"payload": base64.b64encode(payload).decode(), "payloadType": PAYLOAD_TYPE}
    data = json.dumps({**envelope, "signatures": [signature]}).encode()
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
        verify_envelope(json.dumps(envelope).encode(), _trust(key), file="r")
    assert type(info.value) is SignatureError


def test_unknown_signer_fails_with_untrusted_key_error() -> None:
    signer, trusted = generate(), generate()
    with pytest.raises(UntrustedKeyError) as info:
        verify_envelope(sign_payload(b"payload", signer), _trust(trusted), file="r")
    assert info.value.actual == f"signed by {signer.public.key_id}"
    assert info.value.expected == f"a signature by one of {trusted.public.key_id}"


def test_a_wrong_keyid_hint_does_not_stop_a_valid_signature() -> None:
    key = generate()
    envelope = json.loads(sign_payload(b"payload", key))
    envelope["signatures"][0]["keyid"] = "somebody-else"
    assert (
        verify_envelope(json.dumps(envelope).encode(), _trust(key), file="r").key_id
        == key.public.key_id
    )


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
        verify_envelope(json.dumps(envelope).encode(), _trust(key), file="r")


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


def test_receipt_payload_bytes_are_never_reserialized(tmp_path: Path) -> None:
    """A valid but non-canonical payload still verifies: the stored bytes are what count."""
    key = generate()
    payload = b'{ "b": 1,   "a": 2 }'
    verified = verify_envelope(sign_payload(payload, key), _trust(key), file="r")
    assert verified.payload == payload
