"""Ed25519 key files, key ids and trust stores."""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path

import pytest
from nacl.signing import VerifyKey

from servekit.errors import SigningKeyError
from servekit.receipts.keys import (
    describe_key,
    generate,
    load_public_key,
    load_signing_key,
    load_trust_store,
    write_key_pair,
)
from tests.kit.helpers import KEYS


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_generate_writes_a_0600_private_key_and_a_public_key(tmp_path: Path) -> None:
    key = generate()
    paths = write_key_pair(key, tmp_path / "keys")
    assert (paths.private.name, paths.public.name) == ("servekit.key", "servekit.pub")
    assert _mode(paths.private) == 0o600
    assert load_signing_key(paths.private).public.raw == key.public.raw
    assert load_public_key(paths.public).key_id == key.public.key_id


def test_key_id_is_the_sha256_of_the_raw_public_key(tmp_path: Path) -> None:
    key = generate()
    raw = key.public.raw
    assert len(raw) == 32 and key.public.key_id == hashlib.sha256(raw).hexdigest()
    VerifyKey(raw).verify(b"m", key.sign(b"m"))  # the raw bytes are the standard key


def test_generate_refuses_to_overwrite(tmp_path: Path) -> None:
    write_key_pair(generate(), tmp_path)
    before = (tmp_path / "servekit.key").read_bytes()
    with pytest.raises(SigningKeyError, match="already exists"):
        write_key_pair(generate(), tmp_path)
    assert (tmp_path / "servekit.key").read_bytes() == before


def test_a_readable_private_key_is_refused(tmp_path: Path) -> None:
    paths = write_key_pair(generate(), tmp_path)
    paths.private.chmod(0o644)
    with pytest.raises(SigningKeyError, match="mode 0644") as info:
        load_signing_key(paths.private)
    assert info.value.hint and "chmod 600" in info.value.hint


def test_missing_and_malformed_keys(tmp_path: Path) -> None:
    with pytest.raises(SigningKeyError, match="not found"):
        load_signing_key(tmp_path / "nope.key")
    bad = tmp_path / "bad.key"
    bad.write_text("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n")
    bad.chmod(0o600)
    with pytest.raises(SigningKeyError, match="not an unencrypted PEM private key"):
        load_signing_key(bad)


def test_describe_private_and_public(tmp_path: Path) -> None:
    private, public = describe_key(KEYS / "publisher.key"), describe_key(KEYS / "publisher.pub")
    assert (private.kind, public.kind) == ("private", "public")
    assert private.key_id == public.key_id == load_public_key(KEYS / "publisher.pub").key_id
    assert private.public_pem == (KEYS / "publisher.pub").read_text()


def test_trust_store_from_a_file_a_bundle_and_a_directory(tmp_path: Path) -> None:
    ids = {load_public_key(KEYS / f"{n}.pub").key_id for n in ("publisher", "untrusted")}
    assert set(load_trust_store(KEYS / "publisher.pub").keys) < ids
    bundle = tmp_path / "trusted.pem"
    bundle.write_bytes(
        (KEYS / "publisher.pub").read_bytes() + (KEYS / "untrusted.pub").read_bytes()
    )
    assert set(load_trust_store(bundle).keys) == ids
    assert set(load_trust_store(KEYS).keys) == ids  # every *.pub in the directory


def test_empty_trust_stores_load_empty(tmp_path: Path) -> None:
    assert not load_trust_store(tmp_path).keys
    (tmp_path / "empty.pub").write_text("")
    assert not load_trust_store(tmp_path / "empty.pub").keys


def test_trust_store_refuses_a_private_key_and_a_missing_path(tmp_path: Path) -> None:
    with pytest.raises(SigningKeyError, match="holds no PEM public key"):
        load_trust_store(KEYS / "publisher.key")
    with pytest.raises(SigningKeyError, match="trust store not found"):
        load_trust_store(tmp_path / "missing.pub")
