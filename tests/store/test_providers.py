"""Providers: the one the settings name, and the webhooks each posts (the Stripe adapter
against a fake Stripe API: tests/store/test_stripe_provider.py)."""

from __future__ import annotations

import pytest

from servekit.config import load_settings
from servekit.errors import UsageError
from servekit.store.providers import (
    WEBHOOK_PROVIDERS,
    ProviderName,
    SandboxProvider,
    StripeProvider,
    event_source,
    provider_from_settings,
)


def test_the_provider_comes_from_the_settings() -> None:
    assert load_settings({}).payment_provider is ProviderName.SANDBOX
    assert isinstance(provider_from_settings(load_settings({})), SandboxProvider)
    stripe_env = {"SERVEKIT_PAYMENT_PROVIDER": "stripe", "SERVEKIT_STRIPE_API_KEY": "sk_test_x"}
    assert load_settings(stripe_env).payment_provider is ProviderName.STRIPE
    assert isinstance(provider_from_settings(load_settings(stripe_env)), StripeProvider)


def test_a_provider_without_its_key_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="needs SERVEKIT_STRIPE_API_KEY") as info:
        provider_from_settings(load_settings({"SERVEKIT_PAYMENT_PROVIDER": "stripe"}))
    assert info.value.hint


def test_an_unknown_provider_is_refused_with_the_settings() -> None:
    with pytest.raises(UsageError, match="SERVEKIT_PAYMENT_PROVIDER") as info:
        load_settings({"SERVEKIT_PAYMENT_PROVIDER": "paypal"})
    assert "sandbox" in info.value.message and "stripe" in info.value.message
    assert info.value.hint


def test_each_provider_names_itself_by_the_enum() -> None:
    assert SandboxProvider().name is ProviderName.SANDBOX
    assert StripeProvider.name is ProviderName.STRIPE


def test_only_a_provider_that_posts_events_has_a_webhook() -> None:
    for name in WEBHOOK_PROVIDERS:
        assert event_source(name, "whsec_x").name is name
    with pytest.raises(UsageError, match="posts no webhook events"):
        event_source(ProviderName.SANDBOX, None)
