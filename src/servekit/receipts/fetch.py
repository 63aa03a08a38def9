"""Fetch a store's trust file over HTTP(S): ``servekit trust fetch URL``.

Steps of :func:`fetch_trust_file`:
  1. the URL is the store's base URL (``/keys/trust.toml`` is appended) or the trust
     file's own URL (ending in ``.toml``);
  2. stream the body, refusing it as soon as it passes :data:`MAX_TRUST_FILE_BYTES`
     (never read whole);
  3. read it as a trust file, by its content, with every key inline (a bare key is
     refused: it says nothing of which publisher it speaks for);
  4. the caller writes it and prints the key ids, which the buyer compares out of band:
     TLS and this check prove only that the file came from that address unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import httpx

from servekit.errors import DownloadError
from servekit.receipts.keys import MAX_TRUST_FILE_BYTES, TrustStore, read_trust_store

TRUST_PATH = "/keys/trust.toml"
TIMEOUT = httpx.Timeout(30.0, connect=10.0)


@dataclass(frozen=True)
class FetchedTrust:
    url: str
    data: bytes
    store: TrustStore


def trust_url(url: str) -> str:
    """Step 1: the trust file's URL for a store's base URL (or the file's own URL)."""
    if not url.startswith(("http://", "https://")):
        raise DownloadError(
            f"{url!r} is not an http:// or https:// URL",
            hint="pass the store's address, e.g. https://store.example.com",
        )
    return url if url.split("?", 1)[0].endswith(".toml") else url.rstrip("/") + TRUST_PATH


def _body(response: httpx.Response, url: str) -> bytes:
    """Step 2: at most one byte past the limit is ever read."""
    chunks, size = [], 0
    for chunk in response.iter_bytes():
        chunks.append(chunk)
        size += len(chunk)
        if size > MAX_TRUST_FILE_BYTES:
            raise DownloadError(
                f"{url} sent more than {MAX_TRUST_FILE_BYTES} bytes: not a trust file",
                hint="a trust file is a few kilobytes; check the URL",
            )
    return b"".join(chunks)


def fetch_trust_file(url: str) -> FetchedTrust:
    """Fetch and check the trust file at ``url`` (see the module docstring)."""
    target = trust_url(url)  # 1
    try:
        with (
            httpx.Client(timeout=TIMEOUT, follow_redirects=False) as client,
            client.stream("GET", target) as response,
        ):
            if response.status_code != 200:
                raise DownloadError(
                    f"{target} answered {response.status_code}",
                    hint="pass the store's base URL; its trust file is at " + TRUST_PATH,
                )
            data = _body(response, target)  # 2
    except httpx.HTTPError as exc:
        raise DownloadError(f"cannot fetch {target}: {exc}", hint="check the URL") from exc
    store = read_trust_store(Path(target), data, bare_key=False, base=None)  # 3
    return FetchedTrust(target, data, store)
