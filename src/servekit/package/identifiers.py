"""The string forms of digests and commits, shared by the package and the weights pin.

A module of its own so that reading a pin (``servekit verify weights --pin``) does not
build every model of the package definition.
"""

from __future__ import annotations

from typing import Annotated

from pydantic import StringConstraints

__all__ = ["GitCommit", "Sha256Hex", "TreeDigest"]

Sha256Hex = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
TreeDigest = Annotated[str, StringConstraints(pattern=r"^sha256:[0-9a-f]{64}$")]
GitCommit = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{40}$")]
