"""Verify a model tree on disk against its pin, at the speed of the disk.

Steps (docs/digest.md; the error raised follows :mod:`servekit.weights.problems`):

1. walk the tree safely (:func:`~servekit.weights.tree.scan_tree`): cache-snapshot links
   are followed only inside the snapshot and its ``blobs/``;
2. compare the file list and sizes with the pin and stop there, before reading a
   byte, when any file is missing, extra, of the wrong size, unreadable or unsafe;
3. hash every file on every core, largest first (:mod:`servekit.weights.hashing`);
4. compare each sha256 with the pin, then the tree digest of what was read with
   the pin's tree digest.

Without a per-file pin (a package that records only ``model.tree_digest``) step 2
is skipped and step 4 compares the tree digest alone, which cannot name the file.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict

from servekit import progress
from servekit.errors import FileChangedError
from servekit.weights.digest import tree_digest
from servekit.weights.hashing import Hashed, hash_files
from servekit.weights.models import FileProblem, PinnedFile, ProblemKind, WeightsPin
from servekit.weights.pinfile import read_pin
from servekit.weights.problems import problems_error
from servekit.weights.tree import LocalFile, TreeScan, scan_tree

if TYPE_CHECKING:  # a kit or a package loads these; a pin file does not need them
    from servekit.package.models import ModelPin, Package
    from servekit.receipts.keys import TrustStore
    from servekit.verify.archive import KitContents


class Stage(StrEnum):
    """How far a verification got."""

    LISTING = "listing"  # stopped after comparing names and sizes
    HASHING = "hashing"  # every file was hashed


@dataclass(frozen=True)
class Expected:
    """What a tree must be: a tree digest, the per-file pin when there is one, and
    the repository and commit it comes from (needed by ``--fetch``)."""

    tree_digest: str
    pin: WeightsPin | None
    source: str
    repo: str | None = None
    commit: str | None = None
    package: tuple[str, str, str] | None = None
    """(id, version, publisher) of the verified kit the pin came from."""
    kit: Package | None = None
    """That kit's package as verified (the feed check holds it, never the kit re-read)."""

    @classmethod
    def from_pin(cls, pin: WeightsPin, source: str) -> Expected:
        return cls(pin.tree_digest, pin, source, pin.repo, pin.commit)

    @classmethod
    def from_model(cls, model: ModelPin, pin: WeightsPin | None, source: str) -> Expected:
        return cls(model.tree_digest, pin, source, model.repo, model.commit)


def expected_from_pin_file(path: Path) -> Expected:
    """The expectation of a ``PIN.json`` file."""
    return Expected.from_pin(read_pin(path), str(path))


def expected_from_package(directory: Path) -> Expected:
    """The expectation of a package: its pin file, else its ``model.tree_digest`` alone."""
    from servekit.weights.package import package_pin  # the package's models and rules

    loaded, pin = package_pin(directory)
    name = f"package {directory}"
    return Expected.from_model(loaded.package.model, pin, name)


def _kit_text(kit: KitContents, name: str) -> str | None:
    data = kit.get(name)
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileChangedError(
            f"{name} in the kit is not UTF-8 text", file=name, expected="UTF-8", actual=str(exc)
        ) from exc


def expected_from_kit(path: Path, trust: TrustStore) -> Expected:
    """The expectation a kit carries, once the kit itself verifies against ``trust``.

    The per-file pin is read where ``kit build`` puts it (``model/pin.json``), from the
    verified bytes; an unsigned or tampered kit is refused before its pin is believed.
    """
    from servekit.package.files import PIN_FILE  # the kit's verifier and models
    from servekit.verify.kit import verify_kit
    from servekit.weights.package import package_pin_of

    verified = verify_kit(path, trust)
    model = verified.package.model  # parsed once, from the verified bytes
    pin_text = _kit_text(verified.contents, PIN_FILE)
    pin = None if pin_text is None else package_pin_of(model, pin_text, f"{path}:{PIN_FILE}")
    expected = Expected.from_model(model, pin, f"kit {path}")
    identity = (verified.package_id, verified.version, verified.publisher)
    return dataclasses.replace(expected, package=identity, kit=verified.package)


class WeightsReport(BaseModel):
    """The outcome of one verification; ``ok`` only when there is no problem."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    directory: str
    source: str
    stage: Stage
    expected_tree_digest: str
    actual_tree_digest: str | None
    files: int
    bytes: int
    seconds: float
    problems: tuple[FileProblem, ...]

    @property
    def ok(self) -> bool:
        return not self.problems

    @property
    def gigabytes_per_second(self) -> float:
        return self.bytes / self.seconds / 1e9 if self.seconds > 0 and self.bytes else 0.0

    def as_dict(self) -> dict[str, Any]:
        data = self.model_dump(mode="json")
        data["ok"] = self.ok
        data["gigabytes_per_second"] = round(self.gigabytes_per_second, 3)
        return data

    def raise_for_problems(self) -> None:
        """Raise the error for the problems found (see :mod:`servekit.weights.problems`)."""
        if self.problems:
            raise problems_error(self.problems, f"{self.directory} does not match {self.source}")


def _size_problem(pinned: PinnedFile, found: LocalFile) -> FileProblem:
    return FileProblem(
        kind=ProblemKind.SIZE,
        path=pinned.path,
        expected=f"{pinned.size} bytes",
        actual=f"{found.size} bytes",
    )


def listing_problems(pin: WeightsPin, scan: TreeScan) -> list[FileProblem]:
    """Missing, extra and wrongly sized files: everything knowable before hashing."""
    found = {f.path: f for f in scan.files}
    pinned = {f.path: f for f in pin.files}
    problems = list(scan.problems)
    for path, entry in pinned.items():
        if path not in found:
            expected = f"{entry.size} bytes, sha256 {entry.sha256}"
            problems.append(
                FileProblem(kind=ProblemKind.MISSING, path=path, expected=expected, actual="absent")
            )
        elif found[path].size != entry.size:
            problems.append(_size_problem(entry, found[path]))
    for path in found.keys() - pinned.keys():
        actual = f"{found[path].size} bytes"
        problems.append(
            FileProblem(
                kind=ProblemKind.EXTRA, path=path, expected="absent (not in the pin)", actual=actual
            )
        )
    return sorted(problems, key=lambda p: p.path.encode("utf-8"))


def digest_problems(pin: WeightsPin, hashed: Mapping[str, Hashed]) -> list[FileProblem]:
    """Files whose sha256 differs from the pin."""
    return [
        FileProblem(
            kind=ProblemKind.DIGEST,
            path=entry.path,
            expected=f"sha256 {entry.sha256}",
            actual=f"sha256 {hashed[entry.path].sha256}",
        )
        for entry in pin.files
        if entry.path in hashed and hashed[entry.path].sha256 != entry.sha256
    ]


def _hash(scan: TreeScan, workers: int | None) -> tuple[dict[str, Hashed], list[FileProblem]]:
    with progress.track_bytes(
        f"verifying: sha256 of {len(scan.files)} files", scan.total_bytes
    ) as tracker:
        results = hash_files(scan.files, workers=workers, tracker=tracker)
    hashed = {p: r for p, r in results.items() if isinstance(r, Hashed)}
    problems = [r for r in results.values() if isinstance(r, FileProblem)]
    return hashed, problems


def _tree_problem(expected: Expected, actual: str) -> FileProblem:
    what = "tree digest" if expected.pin else "tree digest (no per-file pin: files cannot be named)"
    return FileProblem(
        kind=ProblemKind.DIGEST,
        path=".",
        expected=f"{what} {expected.tree_digest}",
        actual=f"tree digest {actual}",
    )


@dataclass
class _Run:
    directory: Path
    expected: Expected
    started: float

    def report(
        self, scan: TreeScan, stage: Stage, problems: Sequence[FileProblem], actual: str | None
    ) -> WeightsReport:
        return WeightsReport(
            directory=str(self.directory),
            source=self.expected.source,
            stage=stage,
            expected_tree_digest=self.expected.tree_digest,
            actual_tree_digest=actual,
            files=len(scan.files),
            bytes=scan.total_bytes,
            seconds=round(time.perf_counter() - self.started, 6),
            problems=tuple(problems),
        )


def check_weights(
    directory: Path, expected: Expected, *, workers: int | None = None
) -> WeightsReport:
    """Check the tree at ``directory`` against ``expected``; the report lists every problem."""
    run = _Run(directory, expected, time.perf_counter())
    scan = scan_tree(directory)  # 1
    early = listing_problems(expected.pin, scan) if expected.pin else list(scan.problems)  # 2
    if early:
        return run.report(scan, Stage.LISTING, early, None)
    hashed, problems = _hash(scan, workers)  # 3
    if expected.pin:  # 4
        problems += digest_problems(expected.pin, hashed)
    if problems:
        return run.report(scan, Stage.HASHING, problems, None)
    actual = tree_digest(hashed.values())
    tree = [] if actual == expected.tree_digest else [_tree_problem(expected, actual)]
    return run.report(scan, Stage.HASHING, tree, actual)


def verify_weights(
    directory: Path, expected: Expected, *, workers: int | None = None
) -> WeightsReport:
    """Verify the tree at ``directory``; raise the specific error when anything differs."""
    report = check_weights(directory, expected, workers=workers)
    report.raise_for_problems()
    return report
