"""Reading a kit's package once the kit is read: shared by replay and the feed check."""

from __future__ import annotations

from pathlib import Path

from servekit.errors import FileChangedError, MissingFileError
from servekit.package.files import PACKAGE_FILE
from servekit.package.load import parse_package
from servekit.package.models import Package
from servekit.verify.archive import KitContents


def kit_package(kit: KitContents) -> Package:
    """The kit's ``package.yaml``, parsed and validated (its bytes are checked by
    ``verify_kit``; this only reads them)."""
    data = kit.get(PACKAGE_FILE)
    if data is None:
        raise MissingFileError(
            "the kit holds no package.yaml", file=PACKAGE_FILE, expected="present", actual="absent"
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileChangedError(
            "package.yaml is not UTF-8 text", file=PACKAGE_FILE, expected="UTF-8", actual=str(exc)
        ) from exc
    return parse_package(Path(PACKAGE_FILE), text)
