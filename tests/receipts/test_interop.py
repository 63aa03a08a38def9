"""A servekit receipt is a plain DSSE envelope: securesystemslib (in-toto's library) reads it.

securesystemslib's ``Envelope`` and ``SSlibKey`` (Ed25519) are an implementation written
independently of servekit; if servekit's PAE, base64, key or envelope layout drifted
from DSSE, these tests fail.
"""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import pytest
from securesystemslib.dsse import Envelope
from securesystemslib.exceptions import VerificationError as SslibVerificationError
from securesystemslib.signer import CryptoSigner, SSlibKey

from servekit.receipts.canonical import canonical_json
from servekit.receipts.dsse import pae
from servekit.receipts.formats import PAYLOAD_TYPE
from servekit.receipts.keys import TrustStore, load_public_key, load_signing_key
from servekit.receipts.signing import read_statement, verify_envelope
from tests.kit.helpers import ASSETS, KEYS, private_key


def _receipt(name: str = "kit_valid") -> bytes:
    with tarfile.open(ASSETS / f"{name}.tar.gz") as tar:
        handle = tar.extractfile("receipt.dsse.json")
        assert handle is not None
        return handle.read()


def _sslib_key(name: str) -> SSlibKey:
    public = load_public_key(KEYS / f"{name}.pub")
    return SSlibKey.from_crypto(public.key, keyid=public.key_id)


def test_securesystemslib_verifies_a_servekit_receipt() -> None:
    envelope = Envelope.from_dict(json.loads(_receipt()))
    assert envelope.payload_type == PAYLOAD_TYPE
    assert envelope.pae() == pae(PAYLOAD_TYPE, envelope.payload)
    key = _sslib_key("publisher")
    assert set(envelope.verify([key], 1)) == {key.keyid}
    statement = json.loads(envelope.payload)
    assert statement["_type"] == "https://in-toto.io/Statement/v1"


@pytest.mark.parametrize("name", ["kit_tampered_receipt_payload", "kit_untrusted_key"])
def test_securesystemslib_refuses_what_servekit_refuses(name: str) -> None:
    envelope = Envelope.from_dict(json.loads(_receipt(name)))
    with pytest.raises(SslibVerificationError):
        envelope.verify([_sslib_key("publisher")], 1)


def test_an_envelope_signed_by_securesystemslib_verifies_with_servekit(tmp_path: Path) -> None:
    key = load_signing_key(private_key("publisher", tmp_path))
    signer = CryptoSigner(key.key, _sslib_key("publisher"))
    payload = json.loads(Envelope.from_dict(json.loads(_receipt())).payload)
    envelope = Envelope(canonical_json(payload), PAYLOAD_TYPE, {})
    envelope.sign(signer)
    data = canonical_json(envelope.to_dict())
    assert data == _receipt(), "the same key and payload give servekit's exact bytes"
    trust = TrustStore("test", {key.public.key_id: key.public})
    verified = verify_envelope(data, trust, file="receipt.dsse.json")
    assert read_statement(verified, file="receipt.dsse.json").predicate.package.id == "kit-fixture"
