"""Running the real `servekit` command in a subprocess, as a user would."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "packages"
SERVEKIT = (sys.executable, "-m", "servekit.cli.main")


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
