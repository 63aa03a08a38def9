"""``verify kit`` reads the kit once and writes nothing: the claim rules, the feed check
and the report all use the bytes it verified (no temporary directory, no second read).

The real command runs in a subprocess under a Python audit hook (PEP 578), which sees
every ``open`` (the builtin's, ``os.open``'s and pathlib's), ``mkdir``, rename and
removal the interpreter makes, whoever makes it; the working directory and ``TMPDIR``
are empty directories that must stay empty.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.assets.make_kit_fixtures import private_key
from tests.feed.test_feed import KIT, PUB, write_feed

# Runs ``servekit ARGS...`` in-process after installing the hook; argv[1] is the kit and
# argv[2] the one directory it may write in (the feed state), the rest the command. The
# report goes to the real stderr's descriptor as a last line: that write opens nothing.
DRIVER = r"""
import json, os, sys

kit, allowed, args = os.path.realpath(sys.argv[1]), sys.argv[2], sys.argv[3:]
WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
CHANGES = {"os.mkdir", "os.rename", "os.remove", "os.rmdir", "os.symlink", "os.link",
           "os.truncate", "shutil.copyfile", "shutil.copytree", "shutil.rmtree"}
report = {"kit_opens": 0, "writes": []}

def _inside(path):
    real, root = os.path.realpath(path), os.path.realpath(allowed)
    return real == root or real.startswith(root + os.sep)

def hook(event, hook_args):
    if event == "open" and isinstance(hook_args[0], (str, bytes, os.PathLike)):
        path, flags = os.fsdecode(hook_args[0]), hook_args[2]
        if flags & WRITE and not _inside(path):
            report["writes"].append(f"open {path}")
        elif not flags & WRITE and os.path.realpath(path) == kit:
            report["kit_opens"] += 1
    elif event in CHANGES and not isinstance(hook_args[0], int):
        path = os.fsdecode(hook_args[0])
        if not _inside(path):
            report["writes"].append(f"{event} {path}")

sys.addaudithook(hook)
from servekit.cli.main import main
code = main(args)
os.write(2, ("\nAUDIT " + json.dumps({"code": code, **report}) + "\n").encode())
"""


def _run(tmp_path: Path, args: list[str]) -> tuple[dict[str, object], str]:
    """Run ``servekit ARGS`` in the empty ``work`` directory with an empty ``TMPDIR``;
    only ``state`` may be written in."""
    work, tmp, state = (tmp_path / name for name in ("work", "tmp", "state"))
    for directory in (work, tmp, state):
        directory.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(tmp), "PYTHONDONTWRITEBYTECODE": "1"}
    env["SERVEKIT_CACHE_DIR"] = str(state)  # where a default would go, allowed like the state
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, str(KIT), str(state), *args],
        capture_output=True, text=True, cwd=work, env=env, timeout=120, check=False,
    )  # fmt: skip
    lines = [line for line in done.stderr.splitlines() if line.startswith("AUDIT ")]
    assert lines, done.stdout + done.stderr
    report = json.loads(lines[-1].removeprefix("AUDIT "))
    assert list(work.iterdir()) == [] and list(tmp.iterdir()) == []
    return report, done.stdout + done.stderr


def _feed(tmp_path: Path) -> list[str]:
    """``--feed`` and ``--feed-state`` options: a feed issued now that revokes nothing."""
    issued = dt.datetime.now(dt.UTC) - dt.timedelta(minutes=1)  # the command reads the clock
    feed = write_feed(tmp_path / "feed.json", private_key("publisher", tmp_path), issued=issued)
    return ["--feed", str(feed), "--feed-state", str(tmp_path / "state" / "feed-state.json")]


@pytest.mark.parametrize("with_feed", [False, True], ids=["plain", "feed"])
def test_verify_kit_reads_the_archive_once_and_writes_nothing(
    tmp_path: Path, with_feed: bool
) -> None:
    options = _feed(tmp_path) if with_feed else []
    report, text = _run(tmp_path, ["verify", "kit", str(KIT), "--trust", str(PUB), *options])
    assert report["code"] == 0, text
    assert "✓ verified" in text and "figures, recomputed from the kit's evidence" in text
    if with_feed:
        assert "nothing here is revoked" in text
        assert (tmp_path / "state" / "feed-state.json").is_file()  # the one write it owes
    assert report["kit_opens"] == 1, text  # one read, so one decompression
    assert report["writes"] == [], text


def test_verify_weights_holds_the_verified_kit_against_the_feed(tmp_path: Path) -> None:
    """The kit is read once for its pin and for the feed check; the missing model directory
    then stops the command (exit 2), after both."""
    args = ["verify", "weights", str(tmp_path / "no-model"), "--kit", str(KIT)]
    report, text = _run(tmp_path, [*args, "--trust", str(PUB), *_feed(tmp_path)])
    assert "nothing here is revoked" in text and "not a directory" in text
    assert (report["code"], report["kit_opens"], report["writes"]) == (2, 1, []), text


def test_replay_plans_from_the_verified_kit(tmp_path: Path) -> None:
    """``bench replay`` verifies, plans from those bytes, then finds no endpoint (exit 7)."""
    out = tmp_path / "state" / "replay"  # its output is the one place it writes
    args = ["bench", "replay", str(KIT), "--trust", str(PUB), "--out", str(out)]
    report, text = _run(tmp_path, [*args, "--endpoint", "http://127.0.0.1:9", "--timeout", "5"])
    assert "did not answer a probe request" in text
    assert (report["code"], report["kit_opens"], report["writes"]) == (7, 1, []), text
