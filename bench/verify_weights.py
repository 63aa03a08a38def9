"""Benchmark ``servekit verify weights`` against its peers and the hardware ceiling.

Not a test: it prints figures and ratios measured in one run on this machine.

1. check free disk, then build a tree of ``--size-gib`` (default 4) in ``--shards`` weight
   files plus small files, under a temporary directory (removed at the end);
2. measure the ceiling: the disk's sequential read rate (``dd``), and the single-core
   OpenSSL sha256 rate (``openssl speed -evp sha256``) times the cores; the ceiling is
   the smaller of the read rate and the hashing rate;
3. measure, on the same tree: ``servekit verify weights``; ``sha256sum`` over the files
   in parallel (``xargs -P $(nproc)``); ``model_signing`` (PyPI ``model-signing``,
   ``pip install -e '.[peers]'``) hashing the tree with its default sha256 configuration;
   ``huggingface_hub``'s cache verification (``hf cache verify --local-dir``, against the
   local Hub server of the tests, which lists the same files);
4. all of it with a warm page cache, and again cold when ``/proc/sys/vm/drop_caches`` may
   be written; print GB/s (10^9 bytes per second), the ratio to the ceiling and
   servekit's ratio to each peer.

Two timings per tool: ``wall`` is the whole command (interpreter start and imports
included); ``work`` leaves those out (servekit's own report, ``model_signing`` and
``huggingface_hub`` timed in their process; ``sha256sum`` has no start-up to leave out).
At 1.5 TB only ``work`` matters; at 4 GiB the start-up of a Python CLI is visible.

Each round runs every tool once, back to back; the table gives each tool's range over the
rounds (``--rounds``, default 3), and servekit's lead over it round by round.

A peer that is not installed is skipped with a line that says so; ``--peer-path DIR`` puts
``DIR`` (e.g. ``pip install --target DIR model-signing``) on the path of the peer's process
alone, for a venv that lacks the ``[peers]`` extra. The load average (1, 5 and 15 minutes)
is printed at the start, after each cache mode and at the end; the last line says whether
servekit was at least ``TARGET`` of the ceiling and ahead of model_signing in every round.

Usage: ``.venv/bin/python bench/verify_weights.py [--size-gib 4] [--shards 8] [--dir /tmp]
[--rounds 3] [--warm-only] [--skip 'hf cache verify'] [--peer-path DIR]``
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for tests.hubserver, the local Hub

from tests.hubserver import FakeRepo, HubServer, RepoFileSpec  # noqa: E402

GiB = 1 << 30
TARGET = 0.95  # of the cores x OpenSSL ceiling (issue 24)
PYTHON = sys.executable
BLOCK = 64 << 20
REPO = "bench/model"


@dataclass(frozen=True)
class Timing:
    tool: str
    mode: str
    wall: float
    work: float
    nbytes: int
    ceiling: float  # GB/s, measured in the same round

    @property
    def wall_rate(self) -> float:
        return self.nbytes / self.wall / 1e9

    @property
    def work_rate(self) -> float:
        return self.nbytes / self.work / 1e9


# --- the tree -------------------------------------------------------------------------


def check_disk(base: Path, size: int) -> None:
    free = shutil.disk_usage(base).free
    if free < size + size // 4 + GiB:
        sys.exit(
            f"not enough free disk under {base}: {free / GiB:.1f} GiB free, {size / GiB:.1f} GiB needed"
        )


def build_tree(root: Path, size: int, shards: int) -> int:
    """Weight shards of random bytes (each distinct) and a few small files; returns total bytes."""
    root.mkdir(parents=True)
    (root / "config.json").write_text(json.dumps({"layers": 61, "bench": True}))
    (root / "tokenizer.json").write_text(json.dumps({"vocab": list(range(5000))}))
    block = bytearray(os.urandom(BLOCK))
    per_shard = size // shards
    for i in range(1, shards + 1):
        path = root / f"model-{i:05d}-of-{shards:05d}.safetensors"
        block[:8] = i.to_bytes(8, "little")
        with path.open("wb") as out:
            left = per_shard
            while left > 0:
                out.write(block[: min(left, BLOCK)])
                left -= BLOCK
            out.flush()
            os.fsync(out.fileno())
    return sum(p.stat().st_size for p in root.iterdir())


# --- page cache -----------------------------------------------------------------------


def can_drop_caches() -> bool:
    try:
        drop_caches()
    except OSError:
        return False
    return True


def drop_caches() -> None:
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3\n")


def warm(root: Path) -> None:
    for path in sorted(root.iterdir()):
        with path.open("rb") as f:
            while f.read(BLOCK):
                pass


# --- the ceiling ----------------------------------------------------------------------


def disk_rate(root: Path, mode: str, nbytes: int) -> float:
    """Sequential read of every file, one after the other, with dd (GB/s)."""
    if mode == "cold":
        drop_caches()
    files = " ".join(str(p) for p in sorted(root.iterdir()))
    start = time.perf_counter()
    subprocess.run(
        f"for f in {files}; do dd if=$f of=/dev/null bs=8M status=none; done",
        shell=True,
        check=True,
    )
    return nbytes / (time.perf_counter() - start) / 1e9


def openssl_rate(cores: int = 1) -> float:
    """OpenSSL sha256 over 16 KiB blocks (GB/s): on one core, or on ``cores`` at once
    (``openssl speed -multi``), which falls below ``cores`` x one core where cores share
    execution units (SMT) or clock down."""
    multi = ["-multi", str(cores)] if cores > 1 else []
    out = subprocess.run(
        ["openssl", "speed", *multi, "-evp", "sha256", "-bytes", "16384", "-seconds", "3"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    value = re.findall(r"^sha256\s+([\d.]+)k", out, re.MULTILINE)[-1]
    return float(value) * 1000 / 1e9


def hashlib_rate() -> float:
    """Single-thread hashlib sha256 over an in-memory buffer (GB/s), for reference."""
    buffer = os.urandom(16 << 20)
    digest = hashlib.sha256()
    start = time.perf_counter()
    for _ in range(64):
        digest.update(buffer)
    return 64 * len(buffer) / (time.perf_counter() - start) / 1e9


# --- the tools ------------------------------------------------------------------------


def timed(command: Sequence[str] | str, env: dict[str, str] | None = None) -> tuple[float, str]:
    start = time.perf_counter()
    result = subprocess.run(
        command, shell=isinstance(command, str), capture_output=True, text=True, env=env
    )
    wall = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"{command} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return wall, result.stdout


def run_servekit(tree: Path, pin: Path, *extra: str) -> tuple[float, float]:
    command = ["-m", "servekit.cli.main", "-q", "verify", "weights", str(tree), "--pin", str(pin)]
    wall, out = timed([PYTHON, *command, "--json", *extra])
    report = json.loads(out)
    assert report["ok"], report
    return wall, float(report["seconds"])


def run_sha256sum(tree: Path) -> tuple[float, float]:
    wall, _ = timed(
        f"find {tree} -type f -print0 | xargs -0 -P $(nproc) -n 1 sha256sum > /dev/null"
    )
    return wall, wall


_MODEL_SIGNING = """
import sys, time
import model_signing.hashing as h
start = time.perf_counter()
manifest = h.Config().set_ignored_paths(paths=[], ignore_git_paths=False).hash(sys.argv[1])
print(time.perf_counter() - start, len(list(manifest.resource_descriptors())))
"""


def peer_env(peer_path: Path | None) -> dict[str, str] | None:
    """The environment of a peer's process: ``peer_path`` first on its path, if given."""
    if peer_path is None:
        return None
    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(peer_path), *sys.path[1:]])}


def importable(module: str, env: dict[str, str] | None) -> bool:
    """Whether ``module`` imports in a peer's process with ``env``."""
    found = subprocess.run([PYTHON, "-c", f"import {module}"], env=env, capture_output=True)
    return found.returncode == 0


def run_model_signing(tree: Path, env: dict[str, str] | None) -> tuple[float, float]:
    wall, out = timed([PYTHON, "-c", _MODEL_SIGNING, str(tree)], env)
    seconds, count = out.split()
    assert int(count) == len(list(tree.iterdir())), out
    return wall, float(seconds)


_HF_VERIFY = """
import sys, time
from huggingface_hub import HfApi
start = time.perf_counter()
result = HfApi().verify_repo_checksums(sys.argv[1], local_dir=sys.argv[2])
assert not (result.mismatches or result.missing_paths or result.extra_paths), result
print(time.perf_counter() - start, result.checked_count)
"""


def run_hf(tree: Path, env: dict[str, str], reset: Callable[[], None]) -> tuple[float, float]:
    """huggingface_hub's cache verification: the CLI for wall time, the API for work time."""
    wall, out = timed(
        [str(Path(PYTHON).parent / "hf"), "cache", "verify", REPO, "--local-dir", str(tree)], env
    )
    assert "All checksums match" in out, out
    reset()
    _, out = timed([PYTHON, "-c", _HF_VERIFY, REPO, str(tree)], env)
    return wall, float(out.split()[0])


def has_hf_verify() -> bool:
    try:
        import huggingface_hub
    except ImportError:
        return False
    return hasattr(huggingface_hub.HfApi, "verify_repo_checksums")


def serve_tree(tree: Path, pin: Path) -> HubServer:
    """The local Hub, listing the bench tree as a repository (LFS shards, small git files)."""
    sha = {f["path"]: f["sha256"] for f in json.loads(pin.read_text())["files"]}
    files = [
        RepoFileSpec.from_file(p.name, p, sha256=sha[p.name])
        if p.suffix == ".safetensors"
        else RepoFileSpec.from_bytes(p.name, p.read_bytes(), lfs=False)
        for p in sorted(tree.iterdir())
    ]
    server = HubServer()
    server.add_repo(FakeRepo(REPO)).commit(files)
    return server


# --- the run ----------------------------------------------------------------------------

Runner = Callable[[Callable[[], None]], tuple[float, float]]


@dataclass(frozen=True)
class Peers:
    """Which peers can run: the Hub's environment (``None``: no ``hf cache verify``), and
    whether model_signing imports, in the environment ``signing_env`` (``None``: ours)."""

    hub_env: dict[str, str] | None
    signing: bool
    signing_env: dict[str, str] | None


def tools(tree: Path, pin: Path, peers: Peers) -> dict[str, Runner]:
    """Each tool, as a function of a reset (warm or drop the cache) that it may call again."""
    cores = str(len(os.sched_getaffinity(0)))
    runners: dict[str, Runner] = {
        "servekit": lambda reset: run_servekit(tree, pin),
        # one worker per core, whatever the files: how servekit ran before the worker count
        # was balanced (src/servekit/weights/hashing.py, balanced_workers)
        f"servekit --workers {cores}": lambda reset: run_servekit(tree, pin, "--workers", cores),
        "sha256sum xargs -P": lambda reset: run_sha256sum(tree),
    }
    if peers.signing:
        runners["model_signing"] = lambda reset: run_model_signing(tree, peers.signing_env)
    if peers.hub_env is not None:
        hub_env = peers.hub_env
        runners["hf cache verify"] = lambda reset: run_hf(tree, hub_env, reset)
    return runners


def rates(timings: list[Timing], tool: str) -> list[float]:
    return [t.work_rate for t in timings if t.tool == tool]


def span(values: list[float], digits: int = 3) -> str:
    return f"{min(values):.{digits}f}-{max(values):.{digits}f}"


def load() -> str:
    """The load average over 1, 5 and 15 minutes."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def verdict(timings: list[Timing]) -> str:
    """Whether servekit was at least ``TARGET`` of the ceiling, and ahead of model_signing,
    in every round (the issue's target)."""
    ours = [t for t in timings if t.tool == "servekit"]
    floor = min(t.work_rate / t.ceiling for t in ours)
    line = f"servekit at least {floor:.2f} of the ceiling in every round (target {TARGET})"
    peer = rates(timings, "model_signing")
    if peer:
        lead = min(t.work_rate / p for t, p in zip(ours, peer, strict=True))
        line += f", at least {lead:.2f}x model_signing (target above 1)"
    met = floor >= TARGET and (not peer or lead > 1)
    return f"{line}: {'met' if met else 'NOT met'}"


def report(mode: str, timings: list[Timing]) -> None:
    """Per tool, the range over the rounds (not the best): GB/s, of the round's ceiling,
    and servekit's lead over it round by round (each round runs every tool back to back)."""
    names = list(dict.fromkeys(t.tool for t in timings))
    ours = rates(timings, "servekit")
    ceilings = [t.ceiling for t in timings if t.tool == "servekit"]
    print(f"\n{mode} cache: ceiling {span(ceilings)} GB/s, ranges over {len(ours)} rounds")
    print(
        f"  {'tool':28} {'wall GB/s':>13} {'work GB/s':>13} {'work/ceiling':>13} {'servekit x':>11}"
    )
    for name in names:
        work = rates(timings, name)
        wall = [t.wall_rate for t in timings if t.tool == name]
        lead = [a / b for a, b in zip(ours, work, strict=True)]
        print(
            f"  {name:28} {span(wall):>13} {span(work):>13} "
            f"{span([t.work_rate / t.ceiling for t in timings if t.tool == name], 2):>13} "
            f"{span(lead, 2):>11}"
        )
    print(f"  {verdict(timings)}")


def run_mode(
    mode: str, tree: Path, runners: dict[str, Runner], nbytes: int, cores: int, rounds: int
) -> None:
    """Rounds of every tool, interleaved, so that a noisy moment hits all of them alike;
    the ceiling is measured again in each round, since the machine's load moves."""
    reset = (lambda: drop_caches()) if mode == "cold" else (lambda: None)
    if mode == "warm":
        warm(tree)
    disks: list[float] = []
    timings: list[Timing] = []
    for _ in range(rounds):
        disks.append(disk_rate(tree, mode, nbytes))
        ceiling = min(disks[-1], cores * openssl_rate())
        print(f"  {mode:4} ceiling this round {ceiling:.3f} GB/s", flush=True)
        for name, run in runners.items():
            reset()
            wall, work = run(reset)
            timings.append(Timing(name, mode, wall, work, nbytes, ceiling))
            print(
                f"  {mode:4} {name:20} wall {timings[-1].wall_rate:6.3f} GB/s  work {timings[-1].work_rate:6.3f} GB/s",
                flush=True,
            )
    disk = max(disks)
    print(f"  {mode:4} disk sequential read (dd), best of {rounds}: {disk:.3f} GB/s")
    print(f"  load average now {load()}")
    report(mode, timings)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--size-gib", type=float, default=4.0)
    parser.add_argument("--shards", type=int, default=8)
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument(
        "--rounds", type=int, default=3, help="rounds per cache mode (each tool once a round)"
    )
    parser.add_argument(
        "--warm-only",
        action="store_true",
        help="never drop the page cache (on a machine shared with others' work)",
    )
    parser.add_argument(
        "--peer-path",
        type=Path,
        help="a directory holding model_signing (pip install --target DIR model-signing), "
        "put on the path of its process alone",
    )
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        help="leave out a tool (repeatable), e.g. 'hf cache verify'",
    )
    args = parser.parse_args(argv)
    size = int(args.size_gib * GiB)
    check_disk(args.dir, size)
    cores = len(os.sched_getaffinity(0))
    print(f"cores {cores}, load average {load()}, python {sys.version.split()[0]}")
    work = Path(tempfile.mkdtemp(prefix="servekit-bench-", dir=args.dir))
    server: HubServer | None = None
    try:
        tree = work / "tree"
        nbytes = build_tree(tree, size, args.shards)
        print(f"tree: {nbytes:,} bytes in {len(list(tree.iterdir()))} files under {tree}")
        timed(
            [
                PYTHON,
                "-m",
                "servekit.cli.main",
                "-q",
                "model",
                "digest",
                str(tree),
                "-o",
                str(work / "PIN.json"),
            ]
        )
        per_core, py_rate = openssl_rate(), hashlib_rate()
        print(
            f"openssl sha256, one core: {per_core:.3f} GB/s (x{cores} = {per_core * cores:.3f}); hashlib, one thread: {py_rate:.3f} GB/s"
        )
        print(
            f"openssl sha256 on all {cores} cores at once (-multi): "
            f"{openssl_rate(cores):.3f} GB/s (for reference; the ceiling is cores x one core)"
        )
        hub_env = None
        if has_hf_verify():
            server = serve_tree(tree, work / "PIN.json")
            hub_env = {
                **os.environ,
                "HF_ENDPOINT": server.url,
                "HF_HUB_DISABLE_TELEMETRY": "1",
                "HF_HOME": str(work / "hf"),
            }
        else:
            print(
                "huggingface_hub missing, or without cache verification (verify_repo_checksums):"
                " hf cache verify skipped"
            )
        signing_env = peer_env(args.peer_path)
        signing = importable("model_signing", signing_env)
        if not signing:
            print(
                "model_signing does not import: skipped (pip install -e '.[peers]', or"
                " pip install --target DIR model-signing pyopenssl and --peer-path DIR)"
            )
        modes = ["warm"] + (["cold"] if not args.warm_only and can_drop_caches() else [])
        if "cold" not in modes:
            print("--warm-only, or /proc/sys/vm/drop_caches not writable: no cold-cache figures")
        runners = {
            name: run
            for name, run in tools(
                tree, work / "PIN.json", Peers(hub_env, signing, signing_env)
            ).items()
            if name not in args.skip
        }
        for mode in modes:
            run_mode(mode, tree, runners, nbytes, cores, args.rounds)
        print(f"\nload average at the end {load()}")
    finally:
        if server is not None:
            server.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
