"""Pinning through the real huggingface_hub client, against the local Hub server."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator
from pathlib import Path

import pytest

from servekit.errors import HubError, UsageError
from servekit.weights.hub import Hub
from servekit.weights.models import Sha256Source
from servekit.weights.pin import pin_directory, pin_repo
from tests.hubserver import (
    GRANTED_TOKEN,
    UNGRANTED_TOKEN,
    FakeRepo,
    HubServer,
    RepoFileSpec,
    model_files,
    write_tree,
)

_names = itertools.count()


@pytest.fixture
def no_token(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """No ambient token: HF_TOKEN unset and an empty HF home."""
    monkeypatch.delenv("HF_TOKEN", raising=False)
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    yield


def _repo(server: HubServer, **kwargs: bool) -> FakeRepo:
    return server.add_repo(FakeRepo(f"org/model-{next(_names)}", **kwargs))


def _hub(server: HubServer, token: str | None = None) -> Hub:
    return Hub(endpoint=server.url, token=token)


def test_a_branch_resolves_to_its_commit_and_every_file_is_pinned(
    hub_server: HubServer, no_token: None
) -> None:
    repo = _repo(hub_server)
    files = model_files(3)
    commit = repo.commit(files)
    pin = pin_repo(repo.repo_id, "main", hub=_hub(hub_server))
    assert (pin.repo, pin.revision, pin.commit) == (repo.repo_id, "main", commit)
    by_path = {f.path: f for f in pin.files}
    assert set(by_path) == {f.path for f in files}  # the listing spans several pages
    for spec in files:
        pinned = by_path[spec.path]
        assert (pinned.size, pinned.sha256, pinned.git_blob) == (
            spec.size,
            spec.sha256,
            spec.blob_id,
        )
        expected = Sha256Source.HUB_LFS if spec.lfs else Sha256Source.DOWNLOADED
        assert pinned.sha256_source is expected
    assert pin.shard_count == 3


def test_lfs_content_is_never_downloaded_to_pin(hub_server: HubServer, no_token: None) -> None:
    repo = _repo(hub_server)
    repo.commit(model_files(4))
    lfs = {f.sha256 for f in pin_repo(repo.repo_id, "main", hub=_hub(hub_server)).files}
    fetched = {path.rsplit("/", 1)[-1] for _, path in hub_server.requested("GET /lfs/")}
    assert not fetched & lfs


def test_a_tag_and_a_commit_id_pin_the_same_commit(hub_server: HubServer, no_token: None) -> None:
    repo = _repo(hub_server)
    first = repo.commit(model_files(5), ref="v1")
    repo.commit(model_files(6))  # main moves on
    by_tag = pin_repo(repo.repo_id, "v1", hub=_hub(hub_server))
    by_commit = pin_repo(repo.repo_id, first, hub=_hub(hub_server))
    by_main = pin_repo(repo.repo_id, "main", hub=_hub(hub_server))
    assert by_tag.commit == by_commit.commit == first
    assert by_tag.tree_digest == by_commit.tree_digest != by_main.tree_digest


def test_the_hub_pin_equals_the_digest_of_the_downloaded_snapshot(
    hub_server: HubServer, no_token: None, tmp_path: Path
) -> None:
    repo = _repo(hub_server)
    files = model_files(7)
    commit = repo.commit(files)
    pin = pin_repo(repo.repo_id, "main", hub=_hub(hub_server))
    snapshot = _hub(hub_server).snapshot(repo.repo_id, commit, cache_dir=tmp_path / "cache")
    assert snapshot.name == commit and (snapshot / "model-00001-of-00003.safetensors").is_symlink()
    assert pin_directory(snapshot).tree_digest == pin.tree_digest
    assert pin_directory(write_tree(files, tmp_path / "plain")).tree_digest == pin.tree_digest


def test_an_unknown_revision_is_a_hub_error(hub_server: HubServer, no_token: None) -> None:
    repo = _repo(hub_server)
    repo.commit(model_files(8))
    with pytest.raises(HubError, match="revision 'no-such-branch' does not exist"):
        pin_repo(repo.repo_id, "no-such-branch", hub=_hub(hub_server))


def test_an_unknown_repository_is_a_hub_error(hub_server: HubServer, no_token: None) -> None:
    with pytest.raises(HubError, match="not found on the Hub, or it is private"):
        pin_repo("org/does-not-exist", "main", hub=_hub(hub_server))


def test_a_gated_repo_without_a_token_is_a_hub_error_with_a_hint(
    hub_server: HubServer, no_token: None
) -> None:
    repo = _repo(hub_server, gated=True)
    repo.commit(model_files(9))
    with pytest.raises(HubError, match="is gated") as info:
        pin_repo(repo.repo_id, "main", hub=_hub(hub_server))
    assert info.value.hint is not None and "HF_TOKEN" in info.value.hint
    with pytest.raises(HubError, match="is gated"):
        pin_repo(repo.repo_id, "main", hub=_hub(hub_server, UNGRANTED_TOKEN))


def test_a_gated_repo_with_a_granted_token_from_hf_token_is_pinned(
    hub_server: HubServer, no_token: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = _repo(hub_server, gated=True)
    commit = repo.commit(model_files(10))
    monkeypatch.setenv("HF_TOKEN", GRANTED_TOKEN)  # the usual huggingface_hub way
    assert pin_repo(repo.repo_id, "main", hub=_hub(hub_server)).commit == commit


def test_a_private_repo_needs_a_token(hub_server: HubServer, no_token: None) -> None:
    repo = _repo(hub_server, private=True)
    commit = repo.commit(model_files(11))
    with pytest.raises(HubError, match="or it is private"):
        pin_repo(repo.repo_id, "main", hub=_hub(hub_server))
    assert pin_repo(repo.repo_id, "main", hub=_hub(hub_server, GRANTED_TOKEN)).commit == commit


def test_an_invalid_token_is_a_hub_error(hub_server: HubServer, no_token: None) -> None:
    repo = _repo(hub_server)
    repo.commit(model_files(12))
    with pytest.raises(HubError, match="HTTP 401"):
        pin_repo(repo.repo_id, "main", hub=_hub(hub_server, "hf_unknown"))


def test_bytes_that_are_not_the_listed_blob_are_refused(
    hub_server: HubServer, no_token: None
) -> None:
    repo = _repo(hub_server)
    honest = RepoFileSpec.from_bytes("config.json", b'{"a": 1}')
    lying = RepoFileSpec(
        honest.path, honest.size, honest.sha256, honest.blob_id, False, data=b'{"a": 2}'
    )
    repo.commit([*model_files(13)[4:], lying])
    with pytest.raises(HubError, match="not the file listed at the commit"):
        pin_repo(repo.repo_id, "main", hub=_hub(hub_server))


def test_an_lfs_size_that_disagrees_with_the_listing_is_refused(
    hub_server: HubServer, no_token: None
) -> None:
    repo = _repo(hub_server)
    shard = RepoFileSpec.from_bytes("model.safetensors", b"x" * 100)
    odd = RepoFileSpec(
        shard.path, 100, shard.sha256, shard.blob_id, True, data=shard.data, lfs_size=99
    )
    repo.commit([odd])
    with pytest.raises(HubError, match="LFS object has 99"):
        pin_repo(repo.repo_id, "main", hub=_hub(hub_server))


def test_an_unreachable_hub_is_a_hub_error(no_token: None) -> None:
    server = HubServer()
    url = server.url
    server.close()
    with pytest.raises(HubError, match="could not reach the Hub"):
        pin_repo("org/x", "main", hub=Hub(endpoint=url))


def test_a_pinned_small_file_is_hashed_from_its_bytes(
    hub_server: HubServer, no_token: None
) -> None:
    repo = _repo(hub_server)
    repo.commit(model_files(14))
    pin = pin_repo(repo.repo_id, "main", hub=_hub(hub_server))
    readme = next(f for f in pin.files if f.path == "README.md")
    assert readme.sha256 == hashlib.sha256(b"# test model 14\n").hexdigest()


def test_a_commit_with_no_files_is_a_hub_error(hub_server: HubServer, no_token: None) -> None:
    repo = _repo(hub_server)
    commit = repo.commit([])
    with pytest.raises(HubError, match=f"@{commit} has no files") as info:
        pin_repo(repo.repo_id, "main", hub=_hub(hub_server))
    assert "check the repository and revision" in str(info.value.hint)


def test_an_empty_directory_has_nothing_to_pin(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="holds no files: there is nothing to pin"):
        pin_directory(tmp_path)
