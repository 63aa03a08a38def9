"""Typed settings, built by :func:`load_settings` and never at import time."""

from __future__ import annotations

import os
from collections.abc import Mapping
from enum import StrEnum
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from servekit.errors import UsageError
from servekit.seams import validating, validation_problems

ENV_PREFIX = "SERVEKIT_"


class ProviderName(StrEnum):
    """The store's payment providers, by the value ``SERVEKIT_PAYMENT_PROVIDER`` takes.

    Defined here because settings import no area (tests/test_layers.py); the store's
    name for it is :class:`servekit.store.providers.ProviderName`, where each provider's
    adapter lives.
    """

    SANDBOX = "sandbox"
    STRIPE = "stripe"


class PasswordHashing(StrEnum):
    """How the store hashes passwords, by the value ``SERVEKIT_PASSWORD_HASHING`` takes:
    argon2id at RFC 9106's low-memory cost (3 passes over 64 MiB, 4 lanes; argon2-cffi's
    default), or its cheapest parameters, for test suites only (a hash in microseconds,
    which an attacker with the database would enjoy as much)."""

    RFC9106_LOW_MEMORY = "rfc9106-low-memory"
    CHEAPEST_FOR_TESTS = "cheapest-for-tests"


class Settings(BaseModel):
    """Every setting servekit reads, with its default.

    Each field is read from the environment variable ``SERVEKIT_<NAME>``
    (upper case); docs/settings.md lists them all.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    examples_dir: Path = Field(
        default=Path("examples/packages"),
        description="Directory holding the example package definitions used by `servekit demo`.",
    )
    progress: bool = Field(
        default=True,
        description="Show progress bars on a terminal (they are always off when output is not a TTY).",
    )
    cache_dir: Path = Field(
        default_factory=lambda: Path.home() / ".cache" / "servekit",
        description="Where servekit keeps state between commands (the last feed serials seen).",
    )
    home: Path = Field(
        default=Path("var"),
        description="Where `servekit serve` and the store keep their state: the SQLite database "
        "(servekit.db), the kit bytes and the development key.",
    )
    database_url: str | None = Field(
        default=None,
        description="SQLAlchemy URL of the store's database (PostgreSQL with psycopg 3); "
        "unset: SQLite at HOME/servekit.db.",
    )
    enterprise_threshold_usd: float = Field(
        default=10_000,
        ge=0,
        description="Price at or above which a version needs a signed licence before purchase.",
    )
    payment_provider: ProviderName = Field(
        default=ProviderName.SANDBOX,
        description="Payment provider of the store: 'sandbox' (no money moves) or 'stripe'.",
    )
    password_hashing: PasswordHashing = Field(
        default=PasswordHashing.RFC9106_LOW_MEMORY,
        description="argon2id parameters of new password hashes: 'rfc9106-low-memory' or, "
        "for test suites only, 'cheapest-for-tests'. With the default, a hash made at other "
        "parameters is rehashed at it when its user next signs in.",
    )
    stripe_api_key: str | None = Field(default=None, description="Stripe secret API key.")
    stripe_webhook_secret: str | None = Field(
        default=None, description="Stripe webhook signing secret (whsec_...)."
    )


def load_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Build :class:`Settings` from ``environ`` (default: the process environment)."""
    env = os.environ if environ is None else environ
    values: dict[str, str] = {}
    for name in Settings.model_fields:
        key = ENV_PREFIX + name.upper()
        if key in env:
            values[name] = env[key]
    with validating(_invalid_setting):
        return Settings.model_validate(values)


def _invalid_setting(exc: ValidationError) -> UsageError:
    names = {name: ENV_PREFIX + name.upper() for name in Settings.model_fields}
    problems = validation_problems(exc, names)
    return UsageError(
        f"invalid setting: {problems}", hint="see docs/settings.md for each setting's type"
    )
