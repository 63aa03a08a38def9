"""The seam to the Hugging Face Hub: every call goes through ``huggingface_hub``.

Tokens are found the usual ``huggingface_hub`` way (``HF_TOKEN``, or the token saved
by ``hf auth login``) unless one is passed. The endpoint is ``HF_ENDPOINT`` unless one
is passed. Every foreign exception is translated here into a
:class:`~servekit.errors.HubError` (or :class:`~servekit.errors.UsageError` for a
malformed repository id) with a hint.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from servekit import progress
from servekit.errors import HubError, UsageError

if TYPE_CHECKING:  # imported when used: huggingface_hub takes ~0.15 s to import
    from huggingface_hub import HfApi
    from huggingface_hub.errors import HfHubHTTPError
    from huggingface_hub.hf_api import RepoFile

_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_TOKEN_HINT = "set HF_TOKEN, or run `hf auth login`, with a token that may read this repository"


@dataclass(frozen=True)
class HubFile:
    """A file as the Hub lists it at a commit."""

    path: str
    size: int
    blob_id: str
    lfs_sha256: str | None
    lfs_size: int | None


def hub_cache() -> Path:
    """The Hub cache as the environment names it now (``HF_HUB_CACHE``, then ``HF_HOME``):
    huggingface_hub reads both once, when it is first imported, so a later change of either
    would otherwise be ignored and files land in (or come from) another cache."""
    if cache := os.environ.get("HF_HUB_CACHE"):
        return Path(cache)
    if home := os.environ.get("HF_HOME"):
        return Path(home) / "hub"
    from huggingface_hub import constants

    return Path(constants.HF_HUB_CACHE)


def _gated(repo: str) -> HubError:
    return HubError(
        f"{repo} is gated: the Hub refused the download without an accepted access request",
        hint=f"accept the model's conditions on its Hub page, then {_TOKEN_HINT}",
    )


def _http(exc: HfHubHTTPError, what: str) -> HubError:
    status = exc.response.status_code if exc.response is not None else "no response"
    return HubError(f"the Hub refused {what} (HTTP {status}): {exc}", hint=_TOKEN_HINT)


@contextmanager
def hub_errors(repo: str, revision: str, what: str) -> Iterator[None]:
    """Translate ``huggingface_hub`` and network exceptions raised while doing ``what``."""
    import httpx2
    from huggingface_hub.errors import (
        GatedRepoError,
        HfHubHTTPError,
        HFValidationError,
        LocalEntryNotFoundError,
        RemoteEntryNotFoundError,
        RepositoryNotFoundError,
        RevisionNotFoundError,
    )

    try:
        yield
    except GatedRepoError as exc:
        raise _gated(repo) from exc
    except RepositoryNotFoundError as exc:
        raise HubError(
            f"repository {repo} was not found on the Hub, or it is private",
            hint=f"check the name; for a private repository {_TOKEN_HINT}",
        ) from exc
    except RevisionNotFoundError as exc:
        raise HubError(
            f"revision {revision!r} does not exist in {repo}",
            hint="pass a branch, a tag or a full commit id that exists in the repository",
        ) from exc
    except RemoteEntryNotFoundError as exc:
        raise HubError(f"{what}: the file is not in {repo} at {revision}") from exc
    except HfHubHTTPError as exc:
        raise _http(exc, what) from exc
    except HFValidationError as exc:
        raise UsageError(f"{repo!r} is not a valid repository id: {exc}") from exc
    except (httpx2.HTTPError, LocalEntryNotFoundError, OSError) as exc:
        raise HubError(
            f"could not reach the Hub while {what}: {exc}",
            hint="check the network, HF_ENDPOINT and HF_HUB_OFFLINE",
        ) from exc


def _bars() -> AbstractContextManager[object]:
    """``huggingface_hub``'s own bars follow servekit's: off with --quiet or off a terminal."""
    from huggingface_hub.utils.tqdm import disable_progress_bars

    return nullcontext() if progress.is_enabled() else disable_progress_bars()


def _hub_file(entry: RepoFile) -> HubFile:
    lfs = entry.lfs
    return HubFile(
        path=entry.path,
        size=entry.size,
        blob_id=entry.blob_id,
        lfs_sha256=lfs.sha256 if lfs is not None else None,
        lfs_size=lfs.size if lfs is not None else None,
    )


class Hub:
    """The Hub calls servekit makes, with errors translated."""

    def __init__(self, *, endpoint: str | None = None, token: str | None = None) -> None:
        self.endpoint = endpoint
        self.token = token

    @cached_property
    def api(self) -> HfApi:
        from huggingface_hub import HfApi

        return HfApi(endpoint=self.endpoint, token=self.token)

    def resolve(self, repo: str, revision: str) -> str:
        """The immutable commit id that ``revision`` (branch, tag or commit) names now."""
        with hub_errors(repo, revision, f"resolving {repo}@{revision}"):
            info = self.api.model_info(repo, revision=revision)
        commit = info.sha or ""
        if not _COMMIT.match(commit):
            raise HubError(f"the Hub gave no commit id for {repo}@{revision} (got {commit!r})")
        return commit

    def tree(self, repo: str, commit: str) -> list[HubFile]:
        """Every file of ``repo`` at ``commit``, with size, blob id and LFS metadata."""
        from huggingface_hub.hf_api import RepoFile

        with hub_errors(repo, commit, f"listing {repo}@{commit}"):
            entries = list(self.api.list_repo_tree(repo, recursive=True, revision=commit))
        return [_hub_file(e) for e in entries if isinstance(e, RepoFile)]

    def download(self, repo: str, commit: str, path: str, cache_dir: Path) -> Path:
        """Download one file at ``commit`` into ``cache_dir``; return its local path."""
        from huggingface_hub import hf_hub_download

        with hub_errors(repo, commit, f"downloading {path}"), _bars():
            local = hf_hub_download(
                repo,
                path,
                revision=commit,
                cache_dir=cache_dir,
                endpoint=self.endpoint,
                token=self.token,
            )
        return Path(local)

    def snapshot(self, repo: str, commit: str, cache_dir: Path | None = None) -> Path:
        """Download the whole tree at ``commit`` into the cache; return the snapshot path."""
        from huggingface_hub import snapshot_download

        with hub_errors(repo, commit, f"downloading {repo}@{commit}"), _bars():
            local = snapshot_download(
                repo,
                revision=commit,
                cache_dir=cache_dir or hub_cache(),
                endpoint=self.endpoint,
                token=self.token,
            )
        return Path(str(local))
