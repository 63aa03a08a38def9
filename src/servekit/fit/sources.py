"""Where a model comes from: a local directory or ``config.json``, ``REPO@COMMIT`` on the Hub,
or a package's pin."""

from __future__ import annotations

import re
from pathlib import Path

from servekit.errors import FitError, UsageError
from servekit.fit.arch import read_config
from servekit.fit.headers import local_tensors
from servekit.fit.predict import ModelSource
from servekit.package.models import is_placeholder_commit
from servekit.weights.hub import Hub

_REMOTE = re.compile(r"^(?P<repo>[A-Za-z0-9._-]+/[A-Za-z0-9._-]+)@(?P<rev>[^@\s]+)$")


def from_directory(directory: Path) -> ModelSource:
    """``config.json`` and, when present, the safetensors headers of a local directory;
    or, given a ``config.json`` file itself, that config alone (sized from the config)."""
    if directory.is_file():
        return ModelSource(name=str(directory), config=read_config(directory), tensors=None)
    config = read_config(directory / "config.json")
    return ModelSource(name=str(directory), config=config, tensors=local_tensors(directory))


def from_hub(repo: str, revision: str, *, hub: Hub | None = None) -> tuple[ModelSource, int]:
    """``config.json`` and the headers at ``repo@revision``; also the header bytes read."""
    from servekit.fit.remote import fetch

    client = hub or Hub()
    commit = client.resolve(repo, revision)
    model = fetch(repo, commit, hub=client)
    return ModelSource(f"{repo}@{commit}", model.config, model.tensors), model.header_bytes


def resolve(source: str, *, hub: Hub | None = None) -> ModelSource:
    """A model source named on the command line: a directory, or ``REPO@COMMIT``."""
    path = Path(source)
    if path.is_dir() or path.is_file():
        return from_directory(path)
    match = _REMOTE.match(source)
    if match is None:
        raise UsageError(
            f"{source!r} is neither a local model directory, a config.json nor REPO@COMMIT",
            hint="pass a directory holding config.json, a config.json file, or e.g. "
            "org/model@<40-hex commit>, or --package PKG_DIR",
        )
    if is_placeholder_commit(match.group("rev")):
        raise FitError(
            f"{source} names a placeholder commit (all zeros), not one on the Hub",
            hint="pass the model's real commit, a local copy of the model, or its config.json",
        )
    return from_hub(match.group("repo"), match.group("rev"), hub=hub)[0]
