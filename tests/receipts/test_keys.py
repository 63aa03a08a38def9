"""Ed25519 key files, key ids and trust stores."""

from __future__ import annotations

import hashlib
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
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
from servekit.receipts.trust import Scope, render_trust_file
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


def test_one_bare_key_is_trusted_for_one_publisher() -> None:
    trust = load_trust_store(KEYS / "publisher.pub", bare_key=True)
    (key_id,) = trust.keys
    assert trust.grants[key_id].allows("anyone", "any-package")


def test_several_bare_keys_are_refused(tmp_path: Path) -> None:
    """A bundle or a directory cannot say which key signs for whom."""
    bundle = tmp_path / "trusted.pem"
    bundle.write_bytes(
        (KEYS / "publisher.pub").read_bytes() + (KEYS / "untrusted.pub").read_bytes()
    )
    with pytest.raises(SigningKeyError, match="2 public keys"):
        load_trust_store(bundle, bare_key=True)
    with pytest.raises(SigningKeyError, match="directory"):
        load_trust_store(KEYS)


def test_a_trust_file_grants_each_key_a_publisher_and_packages() -> None:
    trust = load_trust_store(KEYS / "trust.toml")
    publisher = load_public_key(KEYS / "publisher.pub").key_id
    untrusted = load_public_key(KEYS / "untrusted.pub").key_id
    assert set(trust.keys) == {publisher, untrusted}
    assert trust.grants[publisher].allows("servekit tests", "kit-fixture")
    assert not trust.grants[publisher].allows("servekit tests", "kit-fixture-2")
    assert not trust.grants[publisher].allows("Someone Else", "kit-fixture")
    assert trust.grants[untrusted].allows("Someone Else", "other-model")
    assert not trust.grants[untrusted].allows("Someone Else", "kit-fixture")


def _trust_file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "trust.toml"
    path.write_text(body)
    (tmp_path / "publisher.pub").write_bytes((KEYS / "publisher.pub").read_bytes())
    return path


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("not toml [", "not a TOML trust file"),
        ("[keys.abc]\n", "is not a key id"),
        (f"[keys.{'0' * 64}]\npublisher = 'x'\n", "exactly publisher, packages and public_key"),
        (
            f"[keys.{'0' * 64}]\npublisher='x'\npackages=[]\npublic_key='publisher.pub'\n",
            "non-empty list",
        ),
        (
            f"[keys.{'0' * 64}]\npublisher='x'\npackages=['a b']\npublic_key='publisher.pub'\n",
            "not a package id pattern",
        ),
        (
            f"[keys.{'0' * 64}]\npublisher='x'\npackages=['*']\npublic_key='publisher.pub'\n",
            "the public key's id is",
        ),
        ("other = 1\n", "nothing else"),
        (f"keys.{'0' * 64} = 1\n", "must be a table"),
        (f"[keys.{'0' * 64}]\npublic_key='publisher.pub'\ngrants=[]\n", "non-empty grants"),
        (
            f"[keys.{'0' * 64}]\npublic_key='publisher.pub'\ngrants=[{{publisher='x'}}]\n",
            r"grants\[0\] must set exactly publisher and packages",
        ),
    ],
)
def test_malformed_trust_files_are_refused(tmp_path: Path, body: str, message: str) -> None:
    with pytest.raises(SigningKeyError, match=message):
        load_trust_store(_trust_file(tmp_path, body))


def test_a_trust_table_with_two_public_keys_is_refused(tmp_path: Path) -> None:
    key_id = load_public_key(KEYS / "publisher.pub").key_id
    (tmp_path / "two.pub").write_bytes(
        (KEYS / "publisher.pub").read_bytes() + (KEYS / "untrusted.pub").read_bytes()
    )
    body = f"[keys.{key_id}]\npublisher='x'\npackages=['*']\npublic_key='two.pub'\n"
    with pytest.raises(SigningKeyError, match="holds 2 public keys"):
        load_trust_store(_trust_file(tmp_path, body))


def test_an_empty_trust_store_loads_empty(tmp_path: Path) -> None:
    """Not a bare key and not a trust file: it trusts nothing, and verifiers refuse that."""
    (tmp_path / "empty.toml").write_text("\n ")
    assert not load_trust_store(tmp_path / "empty.toml").keys


def test_trust_store_refuses_a_private_key_and_a_missing_path(tmp_path: Path) -> None:
    with pytest.raises(SigningKeyError, match="holds a private key"):
        load_trust_store(KEYS / "publisher.key", bare_key=True)
    with pytest.raises(SigningKeyError, match="trust store not found"):
        load_trust_store(tmp_path / "missing.pub")


def _ec_key_files(tmp_path: Path) -> tuple[Path, Path]:
    """A P-256 key pair: the kind of key a user may already have, which servekit does not sign with."""
    key = ec.generate_private_key(ec.SECP256R1())
    private, public = tmp_path / "ec.key", tmp_path / "ec.pub"
    private.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    private.chmod(0o600)
    public.write_bytes(
        key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return private, public


def test_keys_of_another_algorithm_are_named_as_such(tmp_path: Path) -> None:
    private, public = _ec_key_files(tmp_path)
    with pytest.raises(SigningKeyError, match="not an Ed25519 key") as info:
        load_signing_key(private)
    assert "Ed25519" in str(info.value.hint)
    with pytest.raises(SigningKeyError, match="not an Ed25519 public key"):
        load_public_key(public)
    with pytest.raises(SigningKeyError, match="not an Ed25519 key"):
        describe_key(private)


def test_a_trust_file_may_hold_the_public_key_inline(tmp_path: Path) -> None:
    key_id = load_public_key(KEYS / "publisher.pub").key_id
    pem = (KEYS / "publisher.pub").read_text()
    body = f"[keys.{key_id}]\npublisher='x'\npackages=['*']\npublic_key='''{pem}'''\n"
    trust = load_trust_store(_trust_file(tmp_path, body))
    assert set(trust.keys) == {key_id} and trust.grants[key_id].allows("x", "any")


@pytest.mark.parametrize(
    ("publisher", "public_key", "message"),
    [("''", "'publisher.pub'", "publisher must be the publisher's name"),
     ("'x'", "''", "public_key must be a PEM file name or a PEM block")],
    ids=["no-publisher", "no-public-key"],
)  # fmt: skip
def test_a_trust_entry_needs_a_publisher_and_a_key(
    tmp_path: Path, publisher: str, public_key: str, message: str
) -> None:
    body = f"[keys.{'0' * 64}]\npublisher={publisher}\npackages=['*']\npublic_key={public_key}\n"
    with pytest.raises(SigningKeyError, match=message):
        load_trust_store(_trust_file(tmp_path, body))


# --- a trust store is recognised by its content, never by its name ---------------------


def _inline_trust(publisher: str = "x", packages: str = "['only-this']") -> str:
    key_id = load_public_key(KEYS / "publisher.pub").key_id
    pem = (KEYS / "publisher.pub").read_text()
    return (
        f"[keys.{key_id}]\npublisher='{publisher}'\npackages={packages}\npublic_key='''{pem}'''\n"
    )


@pytest.mark.parametrize("name", ["trust.txt", "trust.pub", "trust"])
def test_a_trust_file_keeps_its_grants_whatever_its_name(tmp_path: Path, name: str) -> None:
    """Named otherwise than *.toml, it was read as its one PEM, trusted for everything."""
    path = tmp_path / name
    path.write_text(_inline_trust())
    (grant,) = load_trust_store(path, bare_key=True).grants.values()
    assert grant.allows("x", "only-this") and not grant.bare
    assert not grant.allows("x", "another") and not grant.allows("y", "only-this")


def test_a_bare_key_is_recognised_whatever_its_name(tmp_path: Path) -> None:
    path = tmp_path / "trust.toml"
    path.write_bytes((KEYS / "publisher.pub").read_bytes())
    (grant,) = load_trust_store(path, bare_key=True).grants.values()
    assert grant.bare


def test_a_bare_key_is_refused_where_the_command_does_not_allow_one() -> None:
    with pytest.raises(SigningKeyError, match="one bare public key, and this command needs"):
        load_trust_store(KEYS / "publisher.pub")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"\xff\xfe not text", "is not UTF-8 text"),
        (b"# a trust file in progress [\n" + (KEYS / "publisher.pub").read_bytes(), "among other"),
        ((KEYS / "publisher.pub").read_bytes() + b"\npublisher = 'x'\n", "among other text"),
    ],
    ids=["binary", "comment-then-key", "key-then-toml"],
)
def test_an_ambiguous_or_unreadable_trust_store_is_an_error(
    tmp_path: Path, body: bytes, message: str
) -> None:
    path = tmp_path / "trust.pub"
    path.write_bytes(body)
    with pytest.raises(SigningKeyError, match=message):
        load_trust_store(path, bare_key=True)


def test_a_huge_trust_store_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "trust.toml"
    with path.open("wb") as fh:
        fh.truncate(64 * 1024 * 1024)
    with pytest.raises(SigningKeyError, match="larger than"):
        load_trust_store(path)


def test_one_key_may_be_granted_several_publishers(tmp_path: Path) -> None:
    key_id = load_public_key(KEYS / "publisher.pub").key_id
    body = (
        f"[keys.{key_id}]\npublic_key='publisher.pub'\n"
        "grants=[{publisher='A', packages=['a-*']}, {publisher='B', packages=['b']}]\n"
    )
    grant = load_trust_store(_trust_file(tmp_path, body)).grants[key_id]
    assert grant.allows("A", "a-1") and grant.allows("B", "b") and not grant.allows("A", "b")
    assert grant.speaks_for("A") and grant.speaks_for("B") and not grant.speaks_for("C")
    twice = body.replace("'B'", "'A'")
    with pytest.raises(SigningKeyError, match="names a publisher twice"):
        load_trust_store(_trust_file(tmp_path, twice))


def test_a_rendered_trust_file_reads_back(tmp_path: Path) -> None:
    key = load_public_key(KEYS / "publisher.pub")
    scopes = (Scope('Odd "name"\\', ("a-*",)), Scope("B\u202e", ("b",)))
    text = render_trust_file([(key.key_id, key.pem(), scopes)], "served by a test\nline two")
    path = tmp_path / "served"
    path.write_text(text)
    assert load_trust_store(path).grants[key.key_id].scopes == scopes
