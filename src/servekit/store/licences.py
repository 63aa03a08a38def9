"""The enterprise licence gate: terms, four affirmations, an append-only hash chain.

A signature row records the licensed entity, the statement of authority, the exact terms
text and its sha256, when, and the hash of the row before it; its ``row_hash`` covers all
of that plus each affirmation's clause hash and a salted digest of the signer's personal
data. The personal data (name, title, IP, user agent) lives in ``licence_signers`` and can
be erased (:func:`erase_personal_data`) without breaking the chain. The database rejects
UPDATE and DELETE on signatures and affirmations, and an insert whose ``prev_hash`` is not
the previous row's hash.
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

from sqlalchemy import ColumnElement, Select, SQLColumnExpression, select, text
from sqlalchemy.orm import Session

from servekit.errors import LicenceRequiredError, StoreConflictError, StoreNotFoundError
from servekit.receipts.canonical import canonical_json
from servekit.store.accounts import require_buyer
from servekit.store.models import (
    Clause,
    LicenceAffirmation,
    LicenceSignature,
    LicenceSigner,
    PackageVersion,
    utcnow,
)
from servekit.store.publishing import get_version
from servekit.store.results import LicenceTerms, Principal, SignatureInfo

GENESIS = "0" * 64
CHAIN_LOCK = 0x5E7E_C417  # PostgreSQL advisory lock serializing appends to the chain

CLAUSES: dict[Clause, str] = {
    Clause.NO_REDISTRIBUTION: (
        "The licensed entity will not redistribute, publish or make the package or any of its "
        "artifacts available to any third party, whole or in part, modified or not."
    ),
    Clause.NO_RESALE: (
        "The licensed entity will not resell, sublicense or rent the package or its artifacts."
    ),
    Clause.TRACEABILITY: (
        "The licensed entity accepts that each kit it downloads is traceable to this signature, "
        "its workspace and the time of download."
    ),
    Clause.AUTHORITY: (
        "The signer has the authority to bind the licensed entity to these terms, as stated."
    ),
}


def sha256_text(value: str) -> str:
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def terms_for(package_id: str, version: str, *, session: Session) -> LicenceTerms:
    """What the signer is shown: the version's licence text, its hash, and each clause."""
    row = get_version(package_id, version, session=session)
    return LicenceTerms(
        package_id=package_id,
        version=version,
        terms_text=row.licence_text,
        terms_sha256=row.licence_sha256,
        clauses=dict(CLAUSES),
    )


def personal_digest(salt: str, signer_name: str, signer_title: str, ip: str, agent: str) -> str:
    data = {"name": signer_name, "title": signer_title, "ip": ip, "user_agent": agent}
    return hashlib.sha256(salt.encode() + canonical_json(data)).hexdigest()


def row_hash(row: LicenceSignature, affirmations: list[tuple[str, str]]) -> str:
    """The hash that chains a signature row: canonical JSON of every non-personal field."""
    body: dict[str, Any] = {
        "seq": row.seq,
        "prev_hash": row.prev_hash,
        "workspace_id": row.workspace_id,
        "version_id": row.version_id,
        "licensed_entity": row.licensed_entity,
        "authority_statement": row.authority_statement,
        "terms_sha256": row.terms_sha256,
        "personal_sha256": row.personal_sha256,
        "signed_at": row.signed_at.isoformat(),
        "affirmations": sorted([list(a) for a in affirmations]),
    }
    return hashlib.sha256(canonical_json(body)).hexdigest()


def _chain_head(session: Session) -> tuple[int, str]:
    if session.get_bind().dialect.name == "postgresql":
        session.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": CHAIN_LOCK})
    head = session.scalar(select(LicenceSignature).order_by(LicenceSignature.seq.desc()).limit(1))
    return (0, GENESIS) if head is None else (head.seq, head.row_hash)


def _check_request(version: PackageVersion, terms_sha256: str, affirmed: set[Clause]) -> None:
    missing = [c.value for c in Clause if c not in affirmed]
    if missing:
        raise LicenceRequiredError(
            f"every affirmation must be signed; missing: {', '.join(missing)}",
            hint="affirm each of the four clauses separately",
        )
    if terms_sha256 != version.licence_sha256:
        raise StoreConflictError(
            "the terms you signed are not the terms of this version "
            f"(signed sha256 {terms_sha256[:12]}, current {version.licence_sha256[:12]})",
            hint="fetch the terms again and sign what they say now",
        )


def sign_licence(
    principal: Principal,
    package_id: str,
    version: str,
    *,
    licensed_entity: str,
    signer_name: str,
    signer_title: str,
    authority_statement: str,
    affirmed: set[Clause],
    terms_sha256: str,
    ip: str,
    user_agent: str,
    session: Session,
) -> SignatureInfo:
    """Append a signature (with its four affirmations and the signer's data) to the chain."""
    require_buyer(principal)
    ver = get_version(package_id, version, session=session)
    _check_request(ver, terms_sha256, affirmed)
    seq, prev = _chain_head(session)
    salt = secrets.token_hex(16)
    row = LicenceSignature(
        seq=seq + 1,
        workspace_id=principal.workspace_id,
        version_id=ver.id,
        licensed_entity=licensed_entity,
        authority_statement=authority_statement,
        terms_text=ver.licence_text,
        terms_sha256=ver.licence_sha256,
        personal_sha256=personal_digest(salt, signer_name, signer_title, ip, user_agent),
        signed_at=utcnow(),
        prev_hash=prev,
    )
    clauses = [(c.value, sha256_text(CLAUSES[c])) for c in Clause]
    row.row_hash = row_hash(row, clauses)
    session.add(row)
    session.flush()
    session.add_all(
        LicenceAffirmation(
            signature_id=row.id,
            clause=c,
            clause_text=CLAUSES[c],
            clause_sha256=sha256_text(CLAUSES[c]),
        )
        for c in Clause
    )
    session.add(
        LicenceSigner(
            signature_id=row.id,
            signer_name=signer_name,
            signer_title=signer_title,
            ip=ip,
            user_agent=user_agent,
            salt=salt,
        )
    )
    session.flush()
    return signature_info(row, ver)


def signature_info(row: LicenceSignature, ver: PackageVersion) -> SignatureInfo:
    return SignatureInfo(
        id=row.id,
        seq=row.seq,
        package_id=ver.package_id,
        version=ver.version,
        licensed_entity=row.licensed_entity,
        terms_sha256=row.terms_sha256,
        row_hash=row.row_hash,
        signed_at=row.signed_at,
    )


def signature_for(workspace_id: int, version_id: int, *, session: Session) -> int | None:
    """The workspace's latest signature for a version, if any."""
    return session.scalar(latest_signature(workspace_id, version_id))


def latest_signature(
    workspace_id: int | ColumnElement[int], version_id: int | SQLColumnExpression[int]
) -> Select[tuple[int]]:
    """The query behind :func:`signature_for`; checkout embeds it in its one read."""
    return (
        select(LicenceSignature.id)
        .where(
            LicenceSignature.workspace_id == workspace_id,
            LicenceSignature.version_id == version_id,
        )
        .order_by(LicenceSignature.seq.desc())
        .limit(1)
    )


def erase_personal_data(signature_id: int, *, session: Session) -> None:
    """Erase a signer's name, title, IP and user agent; the chain stays intact."""
    row = session.get(LicenceSigner, signature_id)
    if row is None:
        raise StoreNotFoundError(f"no personal data for signature {signature_id}")
    session.delete(row)
