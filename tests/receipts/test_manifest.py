"""MANIFEST: rendering, strict parsing, and the kit digest."""

from __future__ import annotations

import hashlib

import pytest

from servekit.errors import FileChangedError
from servekit.receipts.manifest import (
    is_kit_path,
    kit_digest,
    manifest_entries,
    parse_manifest,
    render_manifest,
)

FILES = {"b/x.txt": b"x", "a": b"", "MANIFEST": b"ignored", "receipt.dsse.json": b"ignored"}


def test_render_lists_every_file_but_the_manifest_and_receipt_sorted() -> None:
    text = render_manifest(manifest_entries(FILES)).decode()
    empty, x = hashlib.sha256(b"").hexdigest(), hashlib.sha256(b"x").hexdigest()
    assert text == f"servekit-manifest/v1\n{empty}  0  a\n{x}  1  b/x.txt\n"


def test_parse_round_trips_and_digest_is_sha256_of_the_bytes() -> None:
    data = render_manifest(manifest_entries(FILES))
    assert render_manifest(parse_manifest(data)) == data
    assert kit_digest(data) == hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize(
    "edit",
    [
        lambda t: t.replace("servekit-manifest/v1", "servekit-manifest/v2"),
        lambda t: t.rstrip("\n"),
        lambda t: t.replace("  0  a", " 0 a"),
        lambda t: t + t.splitlines(keepends=True)[1],  # a duplicate, out of order
        lambda t: t.replace("  1  b/x.txt", "  1  ../x.txt"),
        lambda t: t.replace("  1  b/x.txt", "  01  b/x.txt"),
    ],
)
def test_parse_refuses_anything_but_the_canonical_form(edit: object) -> None:
    data = render_manifest(manifest_entries(FILES)).decode()
    assert callable(edit)
    with pytest.raises(FileChangedError, match="not in the servekit manifest format"):
        parse_manifest(edit(data).encode())


@pytest.mark.parametrize("path", ["a", "deploy/k8s/x.yaml", "evidence/run-1.jsonl", "a+b_c.d"])
def test_plain_kit_paths(path: str) -> None:
    assert is_kit_path(path)


@pytest.mark.parametrize("path", ["", "/a", "a/../b", "./a", "a//b", "a b", "a\\b", "..", "a/"])
def test_not_kit_paths(path: str) -> None:
    assert not is_kit_path(path)
