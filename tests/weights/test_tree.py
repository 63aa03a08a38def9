"""Walking a tree: cache-snapshot links are followed safely, anything odd is a problem."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from servekit.errors import UsageError
from servekit.weights.models import ProblemKind
from servekit.weights.tree import scan_tree


def _tree(root: Path) -> Path:
    (root / "sub").mkdir(parents=True)
    (root / "a.bin").write_bytes(b"aaaa")
    (root / "sub" / "b.txt").write_bytes(b"bb")
    return root


def _kinds(root: Path) -> dict[str, ProblemKind]:
    return {p.path: p.kind for p in scan_tree(root).problems}


def test_a_plain_tree_lists_files_sorted_with_sizes(tmp_path: Path) -> None:
    scan = scan_tree(_tree(tmp_path))
    assert [(f.path, f.size) for f in scan.files] == [("a.bin", 4), ("sub/b.txt", 2)]
    assert scan.problems == () and scan.total_bytes == 6


def test_git_and_hf_local_dir_metadata_are_not_part_of_the_tree(tmp_path: Path) -> None:
    _tree(tmp_path)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "HEAD").write_text("ref")
    (tmp_path / ".cache" / "huggingface").mkdir(parents=True)
    (tmp_path / ".cache" / "huggingface" / "x.metadata").write_text("m")
    (tmp_path / ".cache" / "other").write_text("kept")
    assert [f.path for f in scan_tree(tmp_path).files] == [".cache/other", "a.bin", "sub/b.txt"]


def _snapshot(tmp_path: Path) -> Path:
    repo = tmp_path / "models--org--name"
    (repo / "blobs").mkdir(parents=True)
    (repo / "blobs" / "abc").write_bytes(b"weights")
    snap = repo / "snapshots" / ("0" * 40)
    (snap / "sub").mkdir(parents=True)
    (snap / "model.safetensors").symlink_to("../../blobs/abc")
    (snap / "sub" / "copy.safetensors").symlink_to("../../../blobs/abc")
    return snap


def test_a_cache_snapshot_follows_links_into_its_blobs(tmp_path: Path) -> None:
    scan = scan_tree(_snapshot(tmp_path))
    assert [(f.path, f.size) for f in scan.files] == [
        ("model.safetensors", 7),
        ("sub/copy.safetensors", 7),
    ]
    assert all(f.source.name == "abc" for f in scan.files)


def test_a_link_leaving_the_snapshot_is_unsafe(tmp_path: Path) -> None:
    snap = _snapshot(tmp_path)
    (tmp_path / "outside").write_bytes(b"secret")
    (snap / "leak").symlink_to(tmp_path / "outside")
    (snap / "refs").symlink_to("../../refs-file")  # inside the repo dir but not in blobs/
    (snap.parent.parent / "refs-file").write_text("main")
    assert _kinds(snap) == {"leak": ProblemKind.UNSAFE, "refs": ProblemKind.UNSAFE}


def test_a_link_leaving_a_plain_tree_is_unsafe(tmp_path: Path) -> None:
    root = _tree(tmp_path / "t")
    (tmp_path / "outside").write_bytes(b"x")
    (root / "out").symlink_to("../outside")
    (root / "in").symlink_to("a.bin")
    assert _kinds(root) == {"out": ProblemKind.UNSAFE}
    assert "in" in [f.path for f in scan_tree(root).files]


def test_a_symlink_loop_is_unsafe(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    (root / "loop1").symlink_to("loop2")
    (root / "loop2").symlink_to("loop1")
    assert _kinds(root) == {"loop1": ProblemKind.UNSAFE, "loop2": ProblemKind.UNSAFE}


def test_dangling_links_fifos_and_directory_links_are_unreadable(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    (root / "dangling").symlink_to("nowhere")
    os.mkfifo(root / "fifo")
    (root / "dirlink").symlink_to("sub")
    assert _kinds(root) == {
        "dangling": ProblemKind.UNREADABLE,
        "dirlink": ProblemKind.UNREADABLE,
        "fifo": ProblemKind.UNREADABLE,
    }


def test_a_name_that_cannot_be_pinned_is_a_problem(tmp_path: Path) -> None:
    root = _tree(tmp_path)
    (root / "new\nline").write_bytes(b"x")
    problems = scan_tree(root).problems
    assert [p.kind for p in problems] == [ProblemKind.UNREADABLE]
    assert "cannot be pinned" in problems[0].actual


def test_a_missing_directory_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a directory"):
        scan_tree(tmp_path / "absent")
