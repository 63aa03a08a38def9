"""The revocation feed: what a publisher withdraws, and the signed document that carries it.

A publisher keeps ``feed.yaml`` (:class:`FeedSource`): four lists of retractions, each
entry with a reason, a date and a link. ``servekit feed sign`` turns it into a signed
``feed.json``: a DSSE envelope over an in-toto Statement whose predicate
(:class:`FeedPredicate`) holds the retractions, a ``serial`` that only grows and an
``expires`` time. docs/feed.md specifies both and the threat model.
"""

from __future__ import annotations

import datetime as dt
from typing import Annotated, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, model_validator

from servekit.package.models import GitCommit, Identifier, NonEmpty, ShortCommit

FEED_PREDICATE_TYPE: Final = "https://servekit.dev/feed/v1"
FEED_SUBJECT_PREFIX: Final = "servekit-feed:"


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


class _Entry(Frozen):
    reason: NonEmpty
    date: dt.date
    link: NonEmpty | None = Field(default=None, description="Where the retraction is explained.")


class RevokedPackage(_Entry):
    """A package version that must no longer be deployed."""

    kind: Literal["package_version"] = "package_version"
    package: Identifier
    version: NonEmpty


class RetractedFigure(_Entry):
    """One published figure of a package version that is withdrawn (a warning, not a refusal)."""

    kind: Literal["figure"] = "figure"
    package: Identifier
    version: NonEmpty
    figure: Identifier


class BadEngine(_Entry):
    """An engine build with a known defect, named by its version string or source commit."""

    kind: Literal["engine_build"] = "engine_build"
    name: NonEmpty = Field(description="The engine name, e.g. 'vllm'.")
    version: NonEmpty | None = Field(default=None, description="The exact version string.")
    commit: ShortCommit | None = Field(default=None, description="The source commit (7-40 hex).")

    @model_validator(mode="after")
    def _named(self) -> BadEngine:
        if self.version is None and self.commit is None:
            raise ValueError("a bad engine build needs its version or its commit")
        return self


class BadModel(_Entry):
    """A model commit that was found bad or replaced upstream."""

    kind: Literal["model_commit"] = "model_commit"
    repo: Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9._-]+/[A-Za-z0-9._-]+$")]
    commit: GitCommit


Retraction = Annotated[
    RevokedPackage | RetractedFigure | BadEngine | BadModel, Field(discriminator="kind")
]


class FeedSource(Frozen):
    """``feed.yaml``: what the publisher keeps by hand (the ``kind`` of each list is implied)."""

    publisher: NonEmpty
    revoked_packages: tuple[RevokedPackage, ...] = ()
    retracted_figures: tuple[RetractedFigure, ...] = ()
    bad_engines: tuple[BadEngine, ...] = ()
    bad_models: tuple[BadModel, ...] = ()

    @property
    def retractions(self) -> tuple[Retraction, ...]:
        return (
            *self.revoked_packages,
            *self.retracted_figures,
            *self.bad_engines,
            *self.bad_models,
        )


class FeedPredicate(Frozen):
    """servekit feed predicate v1 (``https://servekit.dev/feed/v1``)."""

    publisher: NonEmpty
    publisher_key_id: str
    serial: int = Field(ge=1, description="One higher than the last feed this publisher signed.")
    issued: dt.datetime
    expires: dt.datetime
    retractions: tuple[Retraction, ...] = ()


class Subject(Frozen):
    name: str
    digest: dict[str, str]


class FeedStatement(Frozen):
    """in-toto Statement v1 whose subject is the feed's retractions, by digest."""

    type: str = Field(alias="_type")
    subject: tuple[Subject, ...] = Field(min_length=1, max_length=1)
    predicate_type: str = Field(alias="predicateType")
    predicate: FeedPredicate


class Feed(Frozen):
    """A feed whose signature, expiry and serial were checked; ``sha256`` is of its payload."""

    source: str
    key_id: str
    sha256: str
    predicate: FeedPredicate
