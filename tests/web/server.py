"""A real uvicorn server on a loopback port chosen by the kernel, in a thread."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import uvicorn

from servekit.catalog.publish import CatalogSource
from servekit.config import Settings
from servekit.receipts.keys import PRIVATE_KEY_FILE, generate, write_key_pair
from servekit.store.db import open_store
from servekit.web.app import create_app
from servekit.web.home import publish_all
from servekit.web.server import SERVER_OPTIONS


def store_publish(dirs: list[Path], home: Path, database_url: str | None = None) -> None:
    """Publish ``dirs`` through the store of ``home`` (or ``database_url``) as `servekit
    serve` does; every one must be published."""
    keys = home / "keys"
    if not (keys / PRIVATE_KEY_FILE).exists():
        write_key_pair(generate(), keys)
    store = open_store(Settings(home=home, database_url=database_url))
    try:
        done = publish_all(
            store, dirs, keys / PRIVATE_KEY_FILE, Settings().enterprise_threshold_usd
        )
    finally:
        store.engine.dispose()
    assert not done.refused, done.refused


def free_port() -> int:
    """A loopback port nothing listens on (for a server in another process)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def serving(home: Path, source: CatalogSource | None = None) -> Iterator[str]:
    """Serve ``create_app`` for ``home`` (and ``source``, default the store's) on
    127.0.0.1:<free port>; yields the base URL."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(create_app(Settings(home=home), source), **SERVER_OPTIONS)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        sock.close()
