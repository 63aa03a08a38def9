"""The serve configuration a run records: ``--serve-command`` or ``--serve-config``.

A speedup's stock baseline and an accuracy claim "by construction" depend on the flags
the engine ran with, so every run records them rather than trusting a declared field:

* ``--serve-command 'VAR=1 vllm serve MODEL --flag'``: shell words; leading
  ``NAME=VALUE`` words are the environment, the rest the argument vector;
* ``--serve-config FILE``: YAML or JSON, either ``{argv: [...], env: {...}}`` or a
  ``package.yaml`` (its ``serve`` section, with the model's repo as the model argument).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

from servekit.errors import UsageError
from servekit.package.evidence import ServeConfig
from servekit.seams import parse_yaml, read_text

_ENV_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def from_command(command: str) -> ServeConfig:
    """Split a shell command line into environment and argument vector."""
    try:
        words = shlex.split(command)
    except ValueError as exc:
        raise UsageError(f"--serve-command is not a shell command line: {exc}") from exc
    env: dict[str, str] = {}
    while words and _ENV_WORD.match(words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = value
    if not words:
        raise UsageError("--serve-command names no program", hint="e.g. 'vllm serve MODEL'")
    return ServeConfig(argv=tuple(words), env=env, source="--serve-command")


def from_file(path: Path) -> ServeConfig:
    """Read ``{argv, env}`` or a package.yaml's serve section from a YAML/JSON file."""

    def unreadable(message: str, line: int | None = None, hint: str = "") -> UsageError:
        where = f":{line}" if line is not None else ""
        return UsageError(f"cannot read --serve-config {path}{where}: {message}", hint=hint or None)

    data: Any
    data, _ = parse_yaml(read_text(path, unreadable), unreadable)
    if isinstance(data, dict) and isinstance(data.get("serve"), dict):
        data = _package_argv(data)
    argv, env = (data.get("argv"), data.get("env") or {}) if isinstance(data, dict) else (None, {})
    env_ok = isinstance(env, dict) and all(isinstance(v, str) for v in env.values())
    if not isinstance(argv, list) or not _strings(argv) or not env_ok:
        raise UsageError(
            f"--serve-config {path} has no argv list of strings (and env mapping)",
            hint="write {argv: [vllm, serve, MODEL, ...], env: {NAME: value}} or pass a "
            "package.yaml",
        )
    return ServeConfig(argv=tuple(argv), env={str(k): v for k, v in env.items()}, source=str(path))


def _package_argv(data: dict[str, Any]) -> dict[str, Any]:
    serve, model = data["serve"], data.get("model") or {}
    model_words = [serve["model_arg"]] if serve.get("model_arg") else []
    served = serve.get("model_dir") or model.get("repo", "MODEL")  # as kit/command.py does
    argv = [*serve.get("entrypoint", []), *model_words, served]
    argv += serve.get("args", [])
    env = {e["name"]: e["value"] for e in serve.get("env", []) if isinstance(e, dict)}
    return {"argv": argv, "env": env}


def _strings(value: object) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, str) for v in value)


def serve_config(command: str | None, path: Path | None) -> ServeConfig | None:
    """The run's serve configuration from at most one of the two options."""
    if command is not None and path is not None:
        raise UsageError("pass --serve-command or --serve-config, not both")
    if command is not None:
        return from_command(command)
    return from_file(path) if path is not None else None
