"""Closed sets as option types, without importing the libraries that define them.

``servekit bench run --api`` and ``--loop`` are parsed before the benchmark library
loads, so an argument error starts fast (docs/performance.md). tests/cli/test_startup.py
checks that each set equals its enum: ``servekit.package.models.Api`` and
``servekit.bench.loop.LoopKind``.
"""

from __future__ import annotations

from typing import Literal

ApiName = Literal["completions", "chat"]
LoopName = Literal["auto", "uvloop", "asyncio"]
