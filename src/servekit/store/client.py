"""The command-line download client: fetch a held kit from a store's JSON API.

Steps:
  1. ask ``/api/v1/me`` which workspace the API token belongs to;
  2. fetch ``/api/v1/workspaces/WS/downloads/ID/VERSION`` (``latest`` when no version);
  3. check the bytes against the sha256 the store sent, then write them atomically.
The kit is then checked offline with ``servekit verify kit``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import httpx

from servekit.errors import DownloadError
from servekit.store.results import Result

TIMEOUT = httpx.Timeout(60.0, connect=10.0)


class Downloaded(Result):
    package_id: str
    version: str
    workspace: str
    sha256: str
    bytes: int
    path: str


def parse_ref(ref: str) -> tuple[str, str]:
    """``ID@VERSION`` -> (ID, VERSION); ``ID`` -> (ID, "latest")."""
    package_id, _, version = ref.partition("@")
    return package_id, version or "latest"


def _problem(response: httpx.Response) -> str:
    try:
        body = response.json()
        return f"{body.get('detail', response.text)} ({body.get('type', 'no type')})"
    except ValueError:
        return response.text[:200]


def _get(client: httpx.Client, url: str) -> httpx.Response:
    try:
        response = client.get(url)
    except httpx.HTTPError as exc:
        raise DownloadError(f"cannot reach {url}: {exc}", hint="check --url") from exc
    if response.status_code != 200:
        raise DownloadError(
            f"{url} answered {response.status_code}: {_problem(response)}",
            hint="check the token, and that your workspace holds this version",
        )
    return response


def download_kit(base_url: str, token: str, ref: str, out: Path) -> Downloaded:
    """Download a kit the token's workspace holds (steps in the module doc)."""
    package_id, version = parse_ref(ref)
    headers = {"Authorization": f"Bearer {token}"}
    base = base_url.rstrip("/")
    with httpx.Client(headers=headers, timeout=TIMEOUT) as client:
        workspace = str(_get(client, f"{base}/api/v1/me").json()["workspace"])  # 1
        url = f"{base}/api/v1/workspaces/{workspace}/downloads/{package_id}/{version}"
        response = _get(client, url)  # 2
    digest = hashlib.sha256(response.content).hexdigest()  # 3
    if digest != response.headers.get("x-kit-sha256"):
        raise DownloadError(
            f"the kit's sha256 {digest} is not the {response.headers.get('x-kit-sha256')} the store sent",
            hint="download again; if it persists, tell the store operator",
        )
    tmp = out.with_name(out.name + ".part")
    try:
        tmp.write_bytes(response.content)
        tmp.replace(out)
    except OSError as exc:
        raise DownloadError(f"cannot write {out}: {exc.strerror}", hint="check -o") from exc
    return Downloaded(
        package_id=package_id,
        version=response.headers.get("x-kit-version", version),
        workspace=workspace,
        sha256=digest,
        bytes=len(response.content),
        path=str(out),
    )
