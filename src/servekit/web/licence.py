"""The one licence-signature request: the API's JSON body and the store page's form.

Both front ends build a :class:`LicenceSignatureRequest` and call its :meth:`sign`, so
the call that records a signature is assembled in one place. The API's body is validated
by pydantic (a violation is a problem+json 422 naming the field); the form is checked by
:func:`from_form` first, so a refused form names what is missing in words and keeps
what was typed.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import BaseModel, ConfigDict, Field
from sqlalchemy.orm import Session

from servekit.errors import UsageError
from servekit.store import licences
from servekit.store.models import Clause
from servekit.store.results import Principal, SignatureInfo
from servekit.web import fields

USER_AGENT_MAX = 512
FORM_FIELDS = ("licensed_entity", "signer_name", "signer_title", "authority_statement")
"""The form's text fields, in the order a refusal names the missing ones."""
PARAGRAPHS = ("licensed_entity", "authority_statement")  # these two may hold lines


class LicenceSignatureRequest(BaseModel):
    """A signature of a version's enterprise licence, with each clause affirmed."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    package_id: fields.PackageId
    version: fields.Version
    licensed_entity: fields.Paragraph
    signer_name: fields.NonEmptyLine
    signer_title: fields.NonEmptyLine
    authority_statement: fields.Paragraph
    affirmations: dict[Clause, bool] = Field(description="Each clause, affirmed separately.")
    terms_sha256: fields.Sha256 = Field(
        description="sha256 of the terms text the signer was shown."
    )

    def sign(
        self, principal: Principal, *, client: str, user_agent: str, session: Session
    ) -> SignatureInfo:
        """Record the signature for ``principal``'s workspace, with the client's address
        and (printable, bounded) User-Agent as evidence."""
        return licences.sign_licence(
            principal,
            self.package_id,
            self.version,
            licensed_entity=self.licensed_entity,
            signer_name=self.signer_name,
            signer_title=self.signer_title,
            authority_statement=self.authority_statement,
            affirmed={c for c, yes in self.affirmations.items() if yes},
            terms_sha256=self.terms_sha256,
            ip=client,
            user_agent=fields.printable_prefix(user_agent, USER_AGENT_MAX),
            session=session,
        )


def from_form(
    package_id: str,
    version: str,
    kept: Mapping[str, str],
    affirmed: set[Clause],
    terms_sha256: str,
) -> LicenceSignatureRequest:
    """The request a licence form makes, or a :class:`UsageError` saying what is missing
    or out of bounds (the page shows it beside the form)."""
    missing = [f"the {name.replace('_', ' ')}" for name in FORM_FIELDS if not kept.get(name)]
    missing += [f"the '{c.value}' affirmation" for c in Clause if c not in affirmed]
    if missing:
        raise UsageError(
            f"the licence is not signed: {', '.join(missing)} "
            f"{'is' if len(missing) == 1 else 'are'} missing",
            hint="fill in every field and tick each clause; what you entered is kept",
        )
    digest = fields.form_text(terms_sha256, "terms sha256", 64)
    texts = {name: _bounded(name, kept[name]) for name in FORM_FIELDS}
    # the texts now meet the model's bounds (form_text applies the same limits); the path's
    # package id and version, and the digest, are the store's to check (no such version;
    # the terms changed), as for a body that passed validation
    return LicenceSignatureRequest.model_construct(
        package_id=package_id,
        version=version,
        licensed_entity=texts["licensed_entity"],
        signer_name=texts["signer_name"],
        signer_title=texts["signer_title"],
        authority_statement=texts["authority_statement"],
        affirmations={c: c in affirmed for c in Clause},
        terms_sha256=digest,
    )


def _bounded(name: str, value: str) -> str:
    """A form field within its bounds: the two paragraphs may hold lines."""
    paragraph = name in PARAGRAPHS
    limit = fields.PARAGRAPH_MAX if paragraph else fields.NAME_MAX
    return fields.form_text(value, name.replace("_", " "), limit, lines=paragraph)
