"""Closed sets as option types, without importing the libraries that define them.

``servekit bench run --api``, ``--loop``, ``fit --kv-cache-dtype``, ``sim serve --fault``
and ``store add-member --role`` are parsed before their libraries load, so `--help` and an
argument error start fast (docs/performance.md). tests/cli/test_startup.py checks that
each set equals its enum: ``servekit.package.models.Api``, ``servekit.bench.loop.LoopKind``,
``servekit.fit.models.KvDtype``, ``servekit.bench.sim.Fault`` and
``servekit.store.models.Role``. Help texts that several groups share live here too.
"""

from __future__ import annotations

from typing import Literal

ApiName = Literal["completions", "chat"]
LoopName = Literal["auto", "uvloop", "asyncio"]
KvDtypeName = Literal["auto", "fp8"]
FaultName = Literal[
    "http_500", "midstream_error", "malformed", "disconnect", "stall", "wrong_usage"
]
RoleName = Literal["owner", "buyer", "member"]

TRUST_HELP = "Trust file (TOML: each key with the publisher and package ids it may sign), or one publisher's servekit.pub, trusted for this kit's publisher only; recognised by content."
EXPECT_HELP = "Refuse any kit but this one: ID@VERSION, or ID@>=VERSION for that version or later."
