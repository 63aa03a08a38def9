"""Endpoint URLs, checked (scheme, host, port range) before anything connects to them."""

from __future__ import annotations

import urllib.parse

from servekit.errors import UsageError


def parse_url(text: str, option: str = "--endpoint") -> str:
    """``text`` as an http(s) base URL without a trailing slash, or a :class:`UsageError`."""
    hint = "give a base URL such as http://127.0.0.1:8000"
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in text):
        raise UsageError(f"{option} contains spaces or control characters", hint=hint)
    try:
        parts = urllib.parse.urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise UsageError(f"{option} {text!r} is not a valid URL: {exc}", hint=hint) from exc
    if parts.scheme not in {"http", "https"}:
        raise UsageError(f"{option} {text!r} is not an http(s) URL", hint=hint)
    if not parts.hostname:
        raise UsageError(f"{option} {text!r} names no host", hint=hint)
    if port == 0:
        raise UsageError(f"{option} {text!r}: port must be 1-65535", hint=hint)
    return text.rstrip("/")
