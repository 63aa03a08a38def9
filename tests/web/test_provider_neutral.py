"""The web layer talks to payment providers through the store's neutral API (the
``ProviderName`` enum, the ``PaymentProvider`` protocol, ``webhooks.receive``): no file
of it names a provider, so a second provider touches the store alone."""

from __future__ import annotations

import re
from pathlib import Path

import servekit.web

WEB = Path(servekit.web.__file__).parent


def test_no_web_file_names_stripe() -> None:
    files = [p for p in sorted(WEB.rglob("*")) if p.is_file() and p.suffix in {".py", ".html"}]
    assert len(files) > 20
    naming = [str(p.relative_to(WEB)) for p in files if re.search("stripe", p.read_text(), re.I)]
    assert naming == []
