"""What the API routes are bound to."""

from __future__ import annotations

from dataclasses import dataclass

from servekit.store.db import Store
from servekit.store.providers import PaymentProvider


@dataclass(frozen=True)
class ApiContext:
    """The open store, the payment provider, and the webhook secret (None: webhooks refused)."""

    store: Store
    provider: PaymentProvider
    webhook_secret: str | None = None
