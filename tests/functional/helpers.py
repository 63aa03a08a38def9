"""Running the real `servekit` command in a subprocess, as a user would."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "packages"
SERVEKIT = (sys.executable, "-m", "servekit.cli.main")


def ctrl_c_reaches() -> None:
    """``preexec_fn`` for a process a test stops with SIGINT: a suite started in the background
    (``make test &``) runs with SIGINT ignored, which every child inherits and Python then
    leaves ignored; the child gets the default back, as a process started from a terminal."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def servekit(
    *args: str, env: dict[str, str] | None = None, cwd: Path = ROOT, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run ``servekit ARGS`` and capture its output; never raises on a non-zero exit."""
    return subprocess.run(
        [*SERVEKIT, *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        check=False,
        timeout=timeout,
    )


CHROMIUM = Path("/usr/bin/chromium")
needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists() and not os.environ.get("CI"),
    reason="needs Debian's chromium (.ci/system-deps installs it; CI never skips)",
)


def screenshot_dir(name: str) -> Path:
    """``out/test-artifacts/NAME`` (or under ``SERVEKIT_TEST_ARTIFACTS``), emptied of old shots."""
    base = Path(os.environ.get("SERVEKIT_TEST_ARTIFACTS", ROOT / "out" / "test-artifacts"))
    out = base / name
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.png"):
        old.unlink()
    return out


def sim_metric(text: str, name: str) -> float:
    """The value of ``name`` in the simulator's ``/metrics`` text."""
    (line,) = [line for line in text.splitlines() if line.startswith(f"{name} ")]
    return float(line.split()[1])
