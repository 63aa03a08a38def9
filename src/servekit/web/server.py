"""How the app is served: the factory's import path and uvicorn's options.

Kept apart from :mod:`servekit.web.app` so `servekit serve` can name them without
importing FastAPI before it needs to.
"""

from __future__ import annotations

from typing import Any

APP_FACTORY = "servekit.web.app:create_app"

# For every way the app is served (`servekit serve`, the tests, bench/web_load.py):
# no `server: uvicorn` banner, only warnings in the log, and TCP_NODELAY on every
# connection whoever bound the socket (servekit.web.protocol: without it, several
# workers stalled each keep-alive request about 44 ms). An import string, so naming it
# here imports nothing. With several workers, a worker gets 30 s (not uvicorn's 5) to
# answer the supervisor's health check: on a loaded machine importing the app and loading
# the catalog took longer, and the supervisor killed and restarted each worker forever.
SERVER_OPTIONS: dict[str, Any] = {
    "server_header": False,
    "log_level": "warning",
    "http": "servekit.web.protocol:NoDelayHttpTools",
    "timeout_worker_healthcheck": 30,
}
