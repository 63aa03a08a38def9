"""The tree digest: order-free, binds path, size and sha256, documented precisely."""

from __future__ import annotations

import hashlib
import itertools
from dataclasses import dataclass, replace

import pytest

from servekit.weights.digest import canonical_listing, path_problem, tree_digest


@dataclass(frozen=True)
class Entry:
    path: str
    size: int
    sha256: str


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


ENTRIES = (
    Entry("config.json", 24, _sha("config")),
    Entry("model-00001-of-00002.safetensors", 1000, _sha("one")),
    Entry("model-00002-of-00002.safetensors", 999, _sha("two")),
    Entry("tokenizer/tokenizer.json", 7, _sha("tok")),
    Entry("Z-upper-sorts-first", 0, _sha("")),
)


def test_the_digest_is_the_documented_listing_hashed() -> None:
    # Reimplemented from docs/digest.md, independently of the module under test.
    ordered = sorted(ENTRIES, key=lambda e: e.path.encode("utf-8"))
    listing = "servekit-tree-v1\n" + "".join(f"{e.sha256} {e.size} {e.path}\n" for e in ordered)
    assert canonical_listing(ENTRIES) == listing.encode()
    assert tree_digest(ENTRIES) == "sha256:" + hashlib.sha256(listing.encode()).hexdigest()


def test_a_known_tree_has_a_known_digest() -> None:
    # A fixed vector: any implementation of servekit-tree-v1 must give this value.
    # docs/digest.md lists the same vector.
    assert tree_digest(ENTRIES) == (
        "sha256:dc0caae2a5248899bad422e29a68ec3008ecbf93080eeb172bfcc6e4afc15291"
    )


@pytest.mark.parametrize("order", list(itertools.permutations(range(len(ENTRIES))))[::17])
def test_any_order_gives_the_same_digest(order: tuple[int, ...]) -> None:
    assert tree_digest([ENTRIES[i] for i in order]) == tree_digest(ENTRIES)


@pytest.mark.parametrize(
    "change",
    [
        {"path": "config2.json"},
        {"size": 25},
        {"sha256": _sha("other")},
    ],
    ids=["rename", "size", "sha256"],
)
def test_each_bound_field_changes_the_digest(change: dict[str, object]) -> None:
    changed = (replace(ENTRIES[0], **change), *ENTRIES[1:])  # type: ignore[arg-type]
    assert tree_digest(changed) != tree_digest(ENTRIES)


def test_moving_a_file_into_a_directory_changes_the_digest() -> None:
    moved = (replace(ENTRIES[0], path="sub/config.json"), *ENTRIES[1:])
    assert tree_digest(moved) != tree_digest(ENTRIES)


@pytest.mark.parametrize(
    "path", ["", "/abs", "a/../b", "a//b", "./a", "a/", "a\nb", "a\\b", "nul\x00", "\udcff"]
)
def test_bad_paths_are_refused(path: str) -> None:
    assert path_problem(path) is not None
    with pytest.raises(ValueError):
        tree_digest([Entry(path, 1, _sha("x"))])


def test_a_path_listed_twice_is_refused() -> None:
    with pytest.raises(ValueError, match="listed twice"):
        tree_digest([ENTRIES[0], ENTRIES[0]])


def test_a_malformed_sha256_is_refused() -> None:
    with pytest.raises(ValueError, match="sha256"):
        tree_digest([Entry("a", 1, "ABC")])


def test_unicode_paths_sort_by_utf8_bytes() -> None:
    entries = [Entry("é.txt", 1, _sha("e")), Entry("z.txt", 1, _sha("z"))]
    listing = canonical_listing(entries).decode()
    assert listing.index("z.txt") < listing.index("é.txt")  # 'z' (0x7a) < 'é' (0xc3 0xa9)
