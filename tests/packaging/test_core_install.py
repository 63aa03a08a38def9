"""`pip install servekit` alone gives the buyer's tools; a command of an extra says what to install.

The core is installed into a fresh virtual environment from a wheel built from a copy of
the source (no extras, no editable install, nothing else from the development venv); pip
reads this machine's package index and cache for the dependencies, as for any install.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.functional.helpers import ROOT

ASSETS = ROOT / "tests" / "assets"
BENCH_RUN = ["--endpoint", "http://127.0.0.1:9", "--model", "m", "--input-tokens", "8:8",
             "--output-tokens", "2", "--requests", "4", "--out", "run"]  # fmt: skip
TRUST = ASSETS / "keys" / "trust.toml"
# what the core must not bring: the web app, the store, the Hub client, the benchmark client
NOT_CORE = ("fastapi", "uvicorn", "sqlalchemy", "psycopg", "stripe", "matplotlib", "huggingface_hub", "optuna")  # fmt: skip


def _run(
    command: list[str | Path], env: dict[str, str], cwd: Path
) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(c) for c in command], capture_output=True, text=True, env=env, cwd=cwd, timeout=600)  # fmt: skip


@pytest.fixture(scope="module")
def core(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A fresh venv with `pip install SOURCE` (no extras): its bin directory and environment."""
    work = tmp_path_factory.mktemp("core")
    source = work / "servekit"
    source.mkdir()
    shutil.copy(ROOT / "pyproject.toml", source)
    shutil.copy(ROOT / "README.md", source)
    shutil.copytree(ROOT / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))  # fmt: skip
    # bytecode written on first import, as after any install (the CI image turns it off)
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONDONTWRITEBYTECODE")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["SERVEKIT_PROGRESS"] = "0"
    venv = work / "venv"
    # no pip of its own (ensurepip took 3 s): this venv's pip installs into it (--python)
    done = _run([sys.executable, "-m", "venv", "--without-pip", venv], env, work)
    assert done.returncode == 0, done.stderr
    # the wheel built once with this venv's setuptools, as PyPI would serve it (pip's
    # isolated build of the source would first install setuptools into a venv of its own)
    done = _run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
                 "--no-build-isolation", "-w", work / "dist", source], env, work)  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    [wheel] = (work / "dist").glob("servekit-*.whl")
    done = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            venv / "bin" / "python",
            "install",
            "--quiet",
            "--no-compile",
            wheel,
        ],
        env,
        work,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return venv / "bin", env


@pytest.mark.slow
def test_the_core_brings_no_extra(core: tuple[Path, dict[str, str]], tmp_path: Path) -> None:
    bin_dir, env = core
    probe = f"import importlib.util as u; print(*(m for m in {NOT_CORE!r} if u.find_spec(m)))"
    done = _run([bin_dir / "python", "-c", probe], env, tmp_path)
    assert done.returncode == 0 and done.stdout.split() == [], done.stdout + done.stderr
    done = _run([bin_dir / "python", "-c", "import servekit.cli.main; print(servekit.cli.main.__file__)"], env, tmp_path)  # fmt: skip
    assert str(bin_dir.parent) in done.stdout, "the venv's own servekit, not the source tree's"


@pytest.mark.slow
def test_the_core_verifies_and_unpacks_a_kit(
    core: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    bin_dir, env = core
    kit = ASSETS / "kit_valid.tar.gz"
    done = _run([bin_dir / "servekit", "verify", "kit", kit, "--trust", TRUST], env, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "kit-fixture version 1.0.0" in done.stdout
    out = tmp_path / "unpacked"
    done = _run([bin_dir / "servekit", "kit", "unpack", kit, out, "--trust", TRUST], env, tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert (out / "MANIFEST").is_file() and (out / "package.yaml").is_file()
    tampered = ASSETS / "kit_tampered_compose.tar.gz"  # the core still refuses, with the code
    done = _run([bin_dir / "servekit", "verify", "kit", tampered, "--trust", TRUST], env, tmp_path)
    assert done.returncode == 10, done.stdout + done.stderr


@pytest.mark.slow
def test_the_buyers_other_tools_run_on_the_core(
    core: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    bin_dir, env = core
    examples = ROOT / "examples" / "packages"
    model = examples / "llama-850m-h200" / "model"
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "config.json").write_text("{}")
    for argv in (
        ["package", "check", examples / "tiny-sim"],  # every claim rule, numpy included
        ["fit", model, "--gpu", "H200"],  # a local model directory needs no Hub client
        ["model", "digest", tree, "-o", tmp_path / "PIN.json"],
        ["verify", "weights", tree, "--pin", tmp_path / "PIN.json"],
        ["keys", "generate", "--out", tmp_path / "keys"],
    ):
        done = _run([bin_dir / "servekit", *argv], env, tmp_path)
        assert done.returncode == 0, (argv, done.stdout + done.stderr)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("argv", "extra"),
    [
        (["serve", "--port", "9"], "web"),  # --help needs no library: serving does
        (["store", "audit"], "store"),
        (["bench", "run", *BENCH_RUN], "bench"),  # its --help needs no library: a run does
        (["model", "pin", "org/model", "--revision", "main"], "hub"),
    ],
    ids=lambda value: value if isinstance(value, str) else " ".join(value[:2]),
)
def test_a_command_of_a_missing_extra_names_it(
    core: tuple[Path, dict[str, str]], tmp_path: Path, argv: list[str], extra: str
) -> None:
    bin_dir, env = core
    done = _run([bin_dir / "servekit", *argv], env, tmp_path)
    assert done.returncode == 8, done.stdout + done.stderr
    assert f"pip install 'servekit[{extra}]'" in done.stderr
    assert "Traceback" not in done.stderr
