"""Shared by the kit, receipt and verify tests: keys, package copies, deploy-file parsers.

The parsers read each deploy file the way its consumer does (Compose, Kubernetes, sh)
and are written independently of servekit's renderers, so a renderer bug cannot hide.
"""

from __future__ import annotations

import shlex
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from servekit.package.models import Package
from tests.assets.make_kit_fixtures import PACKAGE_DIR, private_key
from tests.yamlio import dump_yaml

ROOT = Path(__file__).resolve().parents[2]
ASSETS = ROOT / "tests" / "assets"
KEYS = ASSETS / "keys"
SHARED_SCHEMAS = ROOT.parent / "shared" / "schemas"
EXAMPLES = sorted(p.parent for p in (ROOT / "examples" / "packages").glob("*/package.yaml"))

__all__ = ["PACKAGE_DIR", "private_key"]


def package_copy(
    tmp_path: Path, edit: Callable[[dict[str, Any]], None] | None = None, source: Path = PACKAGE_DIR
) -> Path:
    """A copy of a package directory under ``tmp_path``, its package.yaml edited by ``edit``."""
    target = tmp_path / "pkg"
    shutil.copytree(source, target)
    if edit is not None:
        data = yaml.safe_load((target / "package.yaml").read_text())
        edit(data)
        (target / "package.yaml").write_text(dump_yaml(data))
    return target


# --- expectations, from the package alone -------------------------------------------------


def expected_argv(pkg: Package) -> list[str]:
    """The engine argv a kit must run, written out per engine from the package fields."""
    s, m = pkg.serve, pkg.model
    model = [s.model_arg] if s.model_arg else []
    tail = ["--host", "0.0.0.0", "--port", str(s.port)]
    named = ["--served-model-name", s.served_model_name] if s.served_model_name else []
    if s.model_dir is not None:  # converted weights: the directory, no Hub revision
        names = named if pkg.engine.name in ("vllm", "sglang") else []
        return [*s.entrypoint, *model, s.model_dir, *s.args, *names, *tail]
    match pkg.engine.name:
        case "vllm":
            pin = ["--revision", m.commit, "--code-revision", m.commit]
            pin += ["--tokenizer-revision", m.commit]
            named = ["--served-model-name", s.served_model_name] if s.served_model_name else []
            return [*s.entrypoint, *model, m.repo, *pin, *s.args, *named, *tail]
        case "sglang":
            named = ["--served-model-name", s.served_model_name] if s.served_model_name else []
            return [*s.entrypoint, *model, m.repo, "--revision", m.commit, *s.args, *named, *tail]
        case "transformers":
            return [*s.entrypoint, *model, f"{m.repo}@{m.commit}", *s.args, *tail]
        case "servekit-sim":
            return [*s.entrypoint, *model, m.repo, *s.args, *tail]
        case other:
            raise AssertionError(f"no expectation written for engine {other}")


def package_env(pkg: Package) -> dict[str, str]:
    return {v.name: v.value for v in pkg.serve.env}


def assert_flag_for_flag(argv: list[str], pkg: Package) -> None:
    """argv is the expected vector, and holds the package's args contiguously, in order."""
    assert argv == expected_argv(pkg)
    args = list(pkg.serve.args)
    starts = [i for i in range(len(argv)) if argv[i : i + len(args)] == args]
    assert args == [] or starts, "the package's args are not in the argv as one run"


# --- parsers ------------------------------------------------------------------------------


def compose_service(data: bytes, name: str) -> tuple[list[str], dict[str, str]]:
    """(argv, env) of a Compose service; ``$$`` is Compose's escape for ``$``."""
    service = yaml.safe_load(data)["services"][name]
    argv = [a.replace("$$", "$") for a in service["entrypoint"] + service["command"]]
    env = {k: v.replace("$$", "$") for k, v in service["environment"].items()}
    return argv, env


def k8s_container(container: dict[str, Any]) -> tuple[list[str], dict[str, Any]]:
    """(argv, env) of a container; ``$$(`` is Kubernetes' escape for ``$(``."""
    argv = [a.replace("$$(", "$(") for a in container["command"] + container["args"]]
    env: dict[str, Any] = {}
    for var in container["env"]:
        env[var["name"]] = var["value"].replace("$$(", "$(") if "value" in var else var["valueFrom"]
    return argv, env


def launch_commands(data: bytes) -> tuple[list[list[str]], dict[str, str]]:
    """Every ``exec`` command (argv) and every ``export`` of a launch.sh, as sh reads them."""
    text = data.decode().replace("\\\n", " ")
    execs, env = [], {}
    for line in text.splitlines():
        words = shlex.split(line.strip(), comments=True) if line.strip() else []
        if words[:1] == ["exec"]:
            execs.append(words[1:])
        elif words[:1] == ["export"] and "=" in words[1]:
            name, value = words[1].split("=", 1)
            env[name] = value
    return execs, env


def leader_wrapped(argv: list[str]) -> list[str]:
    """The engine argv inside a leader's ``sh -c 'SETUP && exec "$@"' NAME ARGV...``."""
    assert argv[:2] == ["sh", "-c"] and argv[2].endswith('&& exec "$@"'), argv[:3]
    return argv[4:]
