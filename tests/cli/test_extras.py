"""A command that needs a library of a missing extra names the extra and the pip command."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from servekit.cli.extras import EXTRAS, missing_extra
from servekit.errors import MissingExtraError
from tests.functional.helpers import ROOT


@pytest.mark.parametrize(
    ("module", "command", "extra"),
    [
        ("fastapi", None, "web"),
        ("sqlalchemy.orm", "store", "store"),  # a submodule names its package
        ("sqlalchemy", "serve", "web"),  # serve's extra brings the store too
        ("huggingface_hub", "model", "hub"),
        ("httptools", "bench", "bench"),
        ("optuna", None, "tune"),
    ],
)
def test_the_error_names_the_extra(module: str, command: str | None, extra: str) -> None:
    error = missing_extra(ModuleNotFoundError(f"No module named {module!r}", name=module), command)
    assert isinstance(error, MissingExtraError) and error.exit_code == 8
    assert f"pip install 'servekit[{extra}]'" in str(error.hint)
    assert module.partition(".")[0] in error.message


def test_a_module_of_the_core_is_no_extra() -> None:
    assert missing_extra(ModuleNotFoundError("No module named 'yaml'", name="yaml")) is None
    assert missing_extra(ModuleNotFoundError("no name")) is None
    assert not {"yaml", "pydantic", "numpy", "cryptography", "typer"} & EXTRAS.keys()


PROBE = """
import sys
for name in {blocked!r}:
    sys.modules[name] = None  # as if the extra were not installed: import raises
from servekit.cli.main import main
sys.exit(main({argv!r}))
"""


def _run(blocked: list[str], argv: list[str], cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    code = PROBE.format(blocked=blocked, argv=argv)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=cwd, timeout=120
    )


def test_serve_without_the_web_extra_exits_8_with_the_pip_command(tmp_path: Path) -> None:
    # --help needs no library (tests/cli/test_startup.py); serving does, before it binds
    done = _run(["sqlalchemy"], ["serve", "--port", "9"], cwd=tmp_path)  # [web] has the store
    assert done.returncode == 8, done.stderr
    assert "pip install 'servekit[web]'" in done.stderr and "Traceback" not in done.stderr
    assert not list(tmp_path.iterdir())  # nothing written before the refusal


def test_a_missing_module_of_the_core_stays_a_bug(tmp_path: Path) -> None:
    argv = ["kit", "build", str(tmp_path), "--key", str(tmp_path / "k"), "-o", "x.tar.gz"]
    done = _run(["jsonschema"], argv, cwd=tmp_path)  # the core's own: a broken install
    assert done.returncode == 1 and "ModuleNotFoundError" in done.stderr
