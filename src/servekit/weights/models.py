"""Frozen, typed models of a model pin (the ``PIN.json`` document, docs/digest.md).

A pin lists every file of a model tree with its size and sha256, and the tree digest
over them. A pin made from the Hub also names the repository, the revision asked for,
the immutable commit it resolved to, and each file's git blob id.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from servekit.package.identifiers import GitCommit, Sha256Hex, TreeDigest
from servekit.weights.digest import check_path, sort_key, tree_digest

PIN_FORMAT = 1

#: File name suffixes counted as weight files (``shard_count``).
WEIGHT_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".gguf", ".h5", ".msgpack")

TreePath = Annotated[str, AfterValidator(check_path)]
RepoId = Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]+/[A-Za-z0-9._-]+$")]


class Sha256Source(StrEnum):
    """Where a file's sha256 came from."""

    HUB_LFS = "hub-lfs"  # the LFS object id the Hub publishes for the file
    DOWNLOADED = "downloaded"  # computed by servekit from the file's bytes, fetched at the commit
    LOCAL = "local"  # computed by servekit from a local file


class PinnedFile(BaseModel):
    """One file of a pinned tree."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: TreePath
    size: int = Field(ge=0)
    sha256: Sha256Hex
    git_blob: Annotated[str, Field(pattern=r"^[0-9a-f]{40}$")] | None = Field(
        default=None, description="The git blob id on the Hub (absent for a local digest)."
    )
    sha256_source: Sha256Source


def is_weight_file(path: str) -> bool:
    """Whether ``path`` counts towards ``shard_count``."""
    return path.lower().endswith(WEIGHT_SUFFIXES)


class WeightsPin(BaseModel):
    """The ``PIN.json`` document: every file of a model tree and its tree digest."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    format: Literal[1] = 1
    digest_scheme: Literal["servekit-tree-v1"] = "servekit-tree-v1"
    repo: RepoId | None = None
    revision: str | None = Field(default=None, description="The revision asked for.")
    commit: GitCommit | None = Field(default=None, description="The commit it resolved to.")
    tree_digest: TreeDigest
    total_bytes: int = Field(ge=0)
    file_count: int = Field(ge=1)
    shard_count: int = Field(ge=0)
    files: tuple[PinnedFile, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> WeightsPin:
        paths = [f.path for f in self.files]
        if paths != sorted(paths, key=sort_key) or len(set(paths)) != len(paths):
            raise ValueError("files must be sorted by path (UTF-8 bytes) and unique")
        if self.file_count != len(self.files):
            raise ValueError(f"file_count is {self.file_count}, but {len(self.files)} are listed")
        if self.total_bytes != sum(f.size for f in self.files):
            raise ValueError("total_bytes is not the sum of the file sizes")
        if self.shard_count != sum(1 for p in paths if is_weight_file(p)):
            raise ValueError("shard_count is not the number of weight files listed")
        if (self.repo is None) != (self.commit is None):
            raise ValueError("repo and commit go together: give both or neither")
        return self

    @classmethod
    def build(
        cls,
        files: Iterable[PinnedFile],
        *,
        repo: str | None = None,
        revision: str | None = None,
        commit: str | None = None,
    ) -> WeightsPin:
        """A pin over ``files`` (any order), with totals and the tree digest computed."""
        ordered = tuple(sorted(files, key=lambda f: sort_key(f.path)))
        return cls(
            repo=repo,
            revision=revision,
            commit=commit,
            tree_digest=tree_digest(ordered),
            total_bytes=sum(f.size for f in ordered),
            file_count=len(ordered),
            shard_count=sum(1 for f in ordered if is_weight_file(f.path)),
            files=ordered,
        )

    def file(self, path: str) -> PinnedFile | None:
        return next((f for f in self.files if f.path == path), None)


class ProblemKind(StrEnum):
    """What went wrong with one file while scanning, digesting or verifying a tree."""

    MISSING = "missing"  # in the pin, not on disk
    EXTRA = "extra"  # on disk, not in the pin
    SIZE = "size"  # size differs from the pin
    DIGEST = "digest"  # sha256 differs from the pin
    CHANGED = "changed"  # the file changed while it was being hashed
    UNREADABLE = "unreadable"  # cannot be read: not a regular file, I/O error, permissions
    UNSAFE = "unsafe"  # a symlink loop, or a link that leaves the tree


class FileProblem(BaseModel):
    """One file that failed, with the expected and the actual value."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: ProblemKind
    path: str
    expected: str
    actual: str

    def line(self) -> str:
        return f"{self.kind.value}: {self.path}: expected {self.expected}, actual {self.actual}"

    @classmethod
    def unreadable(cls, path: str, actual: str) -> FileProblem:
        return cls(
            kind=ProblemKind.UNREADABLE,
            path=path,
            expected="a readable regular file",
            actual=actual,
        )


def os_reason(exc: OSError) -> str:
    """An OS error in words, with its errno."""
    return f"{exc.strerror or exc} (errno {exc.errno})" if exc.errno else str(exc)
