"""Validate rendered deploy files offline before they are signed.

``compose.yaml`` is checked against the vendored Compose Specification schema
(``schemas/compose-spec.json``). The Kubernetes manifests are checked by the test
suite (``kubernetes-validate`` for core kinds, the LeaderWorkerSet CRD schema).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import yaml
from jsonschema import Draft7Validator

from servekit.errors import PackageError
from servekit.seams import parsing
from servekit.seams.yamltext import safe_loader


@cache
def compose_validator() -> Draft7Validator:
    text = resources.files("servekit.kit").joinpath("schemas/compose-spec.json").read_text()
    return Draft7Validator(json.loads(text))


def _where(path: Any) -> str:
    return "/".join(str(p) for p in path) or "(top level)"


_HINT = "a value in the package's serve section cannot be written as Compose"


def _unreadable(exc: Exception) -> PackageError:
    return PackageError(f"deploy/compose.yaml does not read back: {exc}", hint=_HINT)


def validate_compose(data: bytes) -> None:
    """Raise :class:`PackageError` if ``data`` is not a valid Compose file."""
    with parsing(_unreadable, yaml.YAMLError):  # every kit build and publish reads it back
        document = yaml.load(data, Loader=safe_loader())
    problems = sorted(compose_validator().iter_errors(document), key=lambda e: list(e.path))
    if problems:
        first = problems[0]
        raise PackageError(
            f"deploy/compose.yaml does not match the Compose Specification at "
            f"{_where(first.absolute_path)}: {first.message}",
            hint=f"{_HINT}; please report it with the package",
        )
