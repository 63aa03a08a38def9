"""Make a model pin: from a Hub repository at a revision, or from a local directory.

From the Hub (:func:`pin_repo`):

1. resolve the revision (branch, tag or commit) to its immutable commit id;
2. list every file at that commit with its size, git blob id and LFS metadata;
3. large (LFS) files: take the sha256 the Hub publishes as the LFS object id, after
   checking that the LFS size equals the listed size;
4. small (plain git) files: download each at the commit, check that its git blob id
   (sha1 of ``blob <size>\\0`` + bytes) equals the one listed, then compute its sha256;
5. compute the tree digest and build the pin.

From a directory (:func:`pin_directory`): walk it safely, hash every file on every
core, and build the pin; any unreadable or unsafe entry is an error.
"""

from __future__ import annotations

import hashlib
import tempfile
from pathlib import Path

from servekit import progress
from servekit.errors import HubError, UsageError
from servekit.weights.hashing import Hashed, hash_files
from servekit.weights.hub import Hub, HubFile
from servekit.weights.models import FileProblem, PinnedFile, Sha256Source, WeightsPin
from servekit.weights.problems import problems_error
from servekit.weights.tree import scan_tree


def git_blob_id(data: bytes) -> str:
    """The git object id of a blob holding ``data``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def _lfs_file(entry: HubFile) -> PinnedFile:
    if entry.lfs_size != entry.size:
        raise HubError(
            f"{entry.path}: the Hub lists {entry.size} bytes but its LFS object has {entry.lfs_size}"
        )
    return PinnedFile(
        path=entry.path,
        size=entry.size,
        sha256=str(entry.lfs_sha256).lower(),
        git_blob=entry.blob_id,
        sha256_source=Sha256Source.HUB_LFS,
    )


def _downloaded_file(entry: HubFile, local: Path) -> PinnedFile:
    data = local.read_bytes()
    blob = git_blob_id(data)
    if len(data) != entry.size or blob != entry.blob_id:
        raise HubError(
            f"{entry.path}: the downloaded bytes are not the file listed at the commit "
            f"(listed {entry.size} bytes, blob {entry.blob_id}; got {len(data)} bytes, blob {blob})",
            hint="run the pin again; if it repeats, the endpoint is not serving the commit",
        )
    return PinnedFile(
        path=entry.path,
        size=entry.size,
        sha256=hashlib.sha256(data).hexdigest(),
        git_blob=blob,
        sha256_source=Sha256Source.DOWNLOADED,
    )


def _pinned_files(hub: Hub, repo: str, commit: str, entries: list[HubFile]) -> list[PinnedFile]:
    small = [e for e in entries if e.lfs_sha256 is None]
    files = [_lfs_file(e) for e in entries if e.lfs_sha256 is not None]
    with (
        tempfile.TemporaryDirectory(prefix="servekit-pin-") as cache,
        progress.track_count("downloading small files", len(small), unit="files") as tracker,
    ):
        for entry in small:
            local = hub.download(repo, commit, entry.path, Path(cache))
            files.append(_downloaded_file(entry, local))
            tracker.advance(1)
    return files


def pin_repo(repo: str, revision: str, *, hub: Hub | None = None) -> WeightsPin:
    """Pin ``repo`` at ``revision`` (resolved to its commit) through ``huggingface_hub``."""
    client = hub or Hub()
    commit = client.resolve(repo, revision)
    entries = client.tree(repo, commit)
    if not entries:
        raise HubError(f"{repo}@{commit} has no files", hint="check the repository and revision")
    files = _pinned_files(client, repo, commit, entries)
    return WeightsPin.build(files, repo=repo, revision=revision, commit=commit)


def _local_file(result: Hashed) -> PinnedFile:
    return PinnedFile(
        path=result.path, size=result.size, sha256=result.sha256, sha256_source=Sha256Source.LOCAL
    )


def pin_directory(directory: Path, *, workers: int | None = None) -> WeightsPin:
    """Pin the files of a local directory (a plain tree or a cache snapshot)."""
    scan = scan_tree(directory)
    if scan.problems:
        raise problems_error(scan.problems, f"{directory}: cannot digest the tree")
    if not scan.files:
        raise UsageError(f"{directory} holds no files: there is nothing to pin")
    with progress.track_bytes(f"sha256 of {len(scan.files)} files", scan.total_bytes) as tracker:
        results = hash_files(scan.files, workers=workers, tracker=tracker)
    problems = [r for r in results.values() if isinstance(r, FileProblem)]
    if problems:
        raise problems_error(problems, f"{directory}: cannot digest the tree")
    return WeightsPin.build(_local_file(r) for r in results.values() if isinstance(r, Hashed))
