"""Ed25519 keys: generate, load and describe them; the trust store receipts verify against.

Key files are PEM. The private key is unencrypted PKCS#8 (``BEGIN PRIVATE KEY``),
written with mode 0600 and refused when group or others can access it; the public
key is SubjectPublicKeyInfo (``BEGIN PUBLIC KEY``). A key id is the lower-case hex
sha256 of the 32 raw public-key bytes. A trust store is a trust file
(:mod:`servekit.receipts.trust`: each key with the publisher and package ids it may
sign) or one public key, trusted for the one publisher whose kit it verifies.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from servekit.errors import SigningKeyError
from servekit.receipts.canonical import sha256_hex
from servekit.receipts.trust import BARE_KEY_GRANT, Grant, Scope, parse_trust_file
from servekit.seams import ReadFailure, read_bytes, reading

PRIVATE_KEY_FILE = "servekit.key"
PUBLIC_KEY_FILE = "servekit.pub"
_PUBLIC_PEM = re.compile(rb"-----BEGIN PUBLIC KEY-----.+?-----END PUBLIC KEY-----", re.DOTALL)


def key_id(raw_public_key: bytes) -> str:
    """Hex sha256 of the raw 32-byte Ed25519 public key."""
    return sha256_hex(raw_public_key)


@dataclass(frozen=True)
class PublicKey:
    """An Ed25519 public key that can check signatures."""

    key: Ed25519PublicKey

    @classmethod
    def from_raw(cls, raw: bytes) -> PublicKey:
        """A key from its 32 raw bytes (as other Ed25519 libraries hold it)."""
        return cls(Ed25519PublicKey.from_public_bytes(raw))

    @property
    def raw(self) -> bytes:
        return self.key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)

    @property
    def key_id(self) -> str:
        return key_id(self.raw)

    def pem(self) -> bytes:
        return self.key.public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )

    def verify(self, signature: bytes, data: bytes) -> bool:
        """Whether ``signature`` is this key's pure Ed25519 signature over ``data``."""
        try:
            self.key.verify(signature, data)
        except InvalidSignature:
            return False
        return True


@dataclass(frozen=True)
class SigningKey:
    """An Ed25519 private key; it signs and never leaves the publisher's machine."""

    key: Ed25519PrivateKey

    @property
    def public(self) -> PublicKey:
        return PublicKey(self.key.public_key())

    def sign(self, data: bytes) -> bytes:
        """Pure Ed25519 signature (deterministic: same key and data, same bytes)."""
        return self.key.sign(data)

    def pem(self) -> bytes:
        return self.key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )


def generate() -> SigningKey:
    """A new random Ed25519 key."""
    return SigningKey(Ed25519PrivateKey.generate())


# --- files -------------------------------------------------------------------------


@dataclass(frozen=True)
class KeyPairPaths:
    private: Path
    public: Path


def _exists_error(path: Path) -> SigningKeyError:
    return SigningKeyError(
        f"{path} already exists; refusing to overwrite a key",
        hint="choose another --out directory, or move the old key away first",
    )


def _write_new(path: Path, data: bytes, mode: int) -> None:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    except FileExistsError as exc:
        raise _exists_error(path) from exc
    except OSError as exc:
        raise SigningKeyError(f"cannot create {path}: {exc.strerror}") from exc
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    path.chmod(mode)  # the umask may have narrowed it; make it exact


def write_key_pair(key: SigningKey, directory: Path) -> KeyPairPaths:
    """Write ``servekit.key`` (0600) and ``servekit.pub`` (0644) into ``directory``."""
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise SigningKeyError(f"cannot create {directory}: {exc.strerror}") from exc
    paths = KeyPairPaths(directory / PRIVATE_KEY_FILE, directory / PUBLIC_KEY_FILE)
    for existing in (paths.private, paths.public):
        if existing.exists():
            raise _exists_error(existing)
    _write_new(paths.private, key.pem(), 0o600)
    _write_new(paths.public, key.public.pem(), 0o644)
    return paths


def _read(path: Path) -> bytes:
    return read_bytes(path, _unreadable)


def _unreadable(failure: ReadFailure) -> SigningKeyError:
    if failure.missing:
        hint = "create one with `servekit keys generate`"
        return SigningKeyError(f"{failure.path}: key file not found", hint=hint)
    strerror = failure.exc.strerror if isinstance(failure.exc, OSError) else failure.reason
    return SigningKeyError(f"{failure.path}: cannot read: {strerror}")


def _check_private_mode(path: Path) -> None:
    mode = stat.S_IMODE(path.stat().st_mode)
    if mode & 0o077:
        raise SigningKeyError(
            f"{path}: the private key is accessible by group or others (mode {mode:04o})",
            hint=f"restrict it to its owner: chmod 600 {path}",
        )


def load_signing_key(path: Path) -> SigningKey:
    """Load a private key, refusing one that group or others can access."""
    data = _read(path)
    _check_private_mode(path)
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except (ValueError, TypeError) as exc:
        raise SigningKeyError(
            f"{path}: not an unencrypted PEM private key ({exc})",
            hint="pass the servekit.key written by `servekit keys generate`",
        ) from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise SigningKeyError(f"{path}: not an Ed25519 key", hint="servekit signs with Ed25519")
    return SigningKey(key)


def _parse_public(data: bytes, where: str) -> PublicKey:
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        raise SigningKeyError(f"{where}: not a PEM public key ({exc})") from exc
    if not isinstance(key, Ed25519PublicKey):
        raise SigningKeyError(f"{where}: not an Ed25519 public key")
    return PublicKey(key)


def load_public_key(path: Path) -> PublicKey:
    """Load one PEM public key."""
    return _parse_public(_read(path), str(path))


@dataclass(frozen=True)
class KeyInfo:
    """What ``servekit keys show`` prints about a key file."""

    path: str
    kind: str  # "private" or "public"
    key_id: str
    public_pem: str
    mode: str


def describe_key(path: Path) -> KeyInfo:
    """Identify a private or public key file and its key id (no mode check)."""
    data = _read(path)
    mode = f"{stat.S_IMODE(path.stat().st_mode):04o}"
    if b"PRIVATE KEY" in data:
        try:
            private = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as exc:
            raise SigningKeyError(f"{path}: not an unencrypted PEM private key ({exc})") from exc
        if not isinstance(private, Ed25519PrivateKey):
            raise SigningKeyError(f"{path}: not an Ed25519 key")
        public, kind = SigningKey(private).public, "private"
    else:
        public, kind = _parse_public(data, str(path)), "public"
    return KeyInfo(str(path), kind, public.key_id, public.pem().decode("ascii"), mode)


# --- trust store ---------------------------------------------------------------------

MAX_TRUST_FILE_BYTES = 1024 * 1024
"""A trust file is a few kilobytes; a megabyte is a few thousand keys."""


@dataclass(frozen=True)
class TrustStore:
    """The publisher keys a verifier trusts, by key id, and what each may sign.

    It may be empty: verifiers refuse that. A key without a grant signs nothing.
    """

    source: str
    keys: Mapping[str, PublicKey]
    grants: Mapping[str, Grant] = field(default_factory=lambda: MappingProxyType({}))

    @property
    def key_ids(self) -> tuple[str, ...]:
        return tuple(sorted(self.keys))

    def scoped(self, publisher: str) -> TrustStore:
        """This store with every bare key bound to ``publisher``, the one the command names."""
        scope = Grant((Scope(publisher, ("*",)),))
        grants = {k: scope if g.bare else g for k, g in self.grants.items()}
        return TrustStore(self.source, self.keys, MappingProxyType(grants))

    def speakers_for(self, publisher: str) -> tuple[str, ...]:
        """The key ids granted for ``publisher`` (those that may sign its feed)."""
        return tuple(
            k for k in self.key_ids if (g := self.grants.get(k)) and g.speaks_for(publisher)
        )


def _trust_file(path: Path, text: str, base: Path | None) -> TrustStore:
    keys, grants = {}, {}
    for entry in parse_trust_file(path, text, base=base):
        blocks = len(_PUBLIC_PEM.findall(entry.pem))
        if blocks > 1:  # the parser would take the first and silently drop the others
            raise SigningKeyError(
                f"{entry.where}: holds {blocks} public keys; a table grants exactly one",
                hint="give each key its own [keys.<key id>] table",
            )
        key = _parse_public(entry.pem, entry.where)
        if key.key_id != entry.key_id:
            raise SigningKeyError(
                f"{entry.where}: the public key's id is {key.key_id}",
                hint="the table name must be the key id `servekit keys show` prints for it",
            )
        keys[key.key_id], grants[key.key_id] = key, entry.grant
    return TrustStore(str(path), MappingProxyType(keys), MappingProxyType(grants))


def _bare_key(path: Path, block: bytes, allowed: bool) -> TrustStore:
    if not allowed:
        raise SigningKeyError(
            f"{path}: is one bare public key, and this command needs a trust file",
            hint="a bare key says nothing of which publisher it speaks for: write a trust file "
            "(TOML) granting it its publisher and package ids (docs/kit.md, Keys and trust)",
        )
    key = _parse_public(block, str(path))
    return TrustStore(
        str(path),
        MappingProxyType({key.key_id: key}),
        MappingProxyType({key.key_id: BARE_KEY_GRANT}),
    )


def _neither(path: Path, why: str) -> SigningKeyError:
    return SigningKeyError(
        f"{path}: {why}",
        hint="pass a trust file (TOML, [keys.<key id>] tables) or the publisher's servekit.pub "
        "as it was published; docs/kit.md (Keys and trust) shows both",
    )


def _read_bounded(path: Path) -> bytes:
    def unreadable(failure: ReadFailure) -> SigningKeyError:
        strerror = failure.exc.strerror if isinstance(failure.exc, OSError) else failure.reason
        return SigningKeyError(f"{path}: cannot read the trust store: {strerror}")

    with reading(path, unreadable), path.open("rb") as fh:
        data = fh.read(MAX_TRUST_FILE_BYTES + 1)
    if len(data) > MAX_TRUST_FILE_BYTES:
        raise _neither(path, f"is larger than {MAX_TRUST_FILE_BYTES} bytes: not a trust store")
    return data


def read_trust_store(
    path: Path, data: bytes, *, bare_key: bool = False, base: Path | None = None
) -> TrustStore:
    """Recognise ``data`` by its content: one PEM public key, or a TOML trust file.

    ``path`` names it in messages; a trust file's ``public_key`` file names are read
    relative to ``base`` (``None``: every key must be inline, as in a fetched file).

    An empty file is an empty store (verifiers refuse it). Anything else is refused,
    never guessed: text holding a private key, several bare keys, a public key among
    other text, or a file that is no valid trust file.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _neither(path, f"is not UTF-8 text (byte {exc.start})") from exc
    if not text.strip():  # trusts no key: every verifier refuses it (exit 13)
        return TrustStore(str(path), MappingProxyType({}))
    if "PRIVATE KEY-----" in text:
        raise _neither(path, "holds a private key; a trust store holds public keys only")
    blocks = _PUBLIC_PEM.findall(data)
    if blocks and not _PUBLIC_PEM.sub(b"", data).strip():  # nothing but PEM public keys
        if len(blocks) == 1:
            return _bare_key(path, blocks[0], bare_key)
        raise SigningKeyError(
            f"{path}: holds {len(blocks)} public keys but says nothing of who may sign what",
            hint="write a trust file (TOML) granting each key its publisher and package ids; "
            "docs/kit.md shows the format",
        )
    try:
        return _trust_file(path, text, base)
    except SigningKeyError as exc:
        if blocks and "not a TOML trust file" in str(exc):
            raise _neither(
                path, "holds a public key among other text: neither one key nor a trust file"
            ) from exc
        raise


def load_trust_store(path: Path, *, bare_key: bool = False) -> TrustStore:
    """The trust store at ``path``, recognised by its content (:func:`read_trust_store`).

    One bare public key is accepted only with ``bare_key=True`` (a command that names
    the one publisher it trusts it for); it then trusts that key for that publisher alone.
    """
    if path.is_dir():
        raise SigningKeyError(
            f"{path}: a directory of keys cannot say who may sign what",
            hint="pass the publisher's servekit.pub, or a trust file (TOML) that grants each "
            "key its publisher and package ids",
        )
    if not path.exists():
        raise SigningKeyError(
            f"{path}: trust store not found",
            hint="pass the publisher's servekit.pub, or a trust file (TOML)",
        )
    return read_trust_store(path, _read_bounded(path), bare_key=bare_key, base=path.parent)
