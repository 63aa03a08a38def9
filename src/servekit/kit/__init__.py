"""The kit builder: deploy files rendered flag for flag from the package, the build
recipe, evidence, licences, a manifest and a signed receipt, in a deterministic archive.

:func:`servekit.kit.build.build_kit` is the entry point; docs/kit.md describes the layout.
What a script needs is re-exported here (each name loads on first use)::

    from servekit.kit import build_kit, write_kit
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from servekit._lazy import lazy_exports

if TYPE_CHECKING:
    from servekit.kit.build import BuiltKit, build_kit, render_deploy, write_kit

_HOME = {
    "BuiltKit": "build",
    "build_kit": "build",
    "render_deploy": "build",
    "write_kit": "build",
}
__all__ = ["BuiltKit", "build_kit", "render_deploy", "write_kit"]
__getattr__ = lazy_exports(__name__, _HOME)
