"""``servekit bench replay``: re-run a kit's request grid against the buyer's endpoint.

Steps:
  1. verify the kit offline against the trust store (:func:`servekit.verify.kit.verify_kit`);
  2. read its package and, per workload, the publisher's run header (model name and
     arrival rate as recorded), from the bytes step 1 verified (the kit is read once);
  3. plan one harness run per workload, exactly as recorded: API, prompt-token range,
     output tokens, concurrencies, warmups, measured requests, seed;
  4. run each with the existing harness (:func:`servekit.bench.runner.run_benchmark`),
     writing ``OUT/<workload>/run-N.jsonl`` in the same evidence format;
  5. write ``OUT/replay.json``: the kit, its receipt digest, the host facts and the
     digest of every evidence file.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from servekit import __version__
from servekit.bench.loop import LoopKind
from servekit.bench.runner import RunConfig, run_benchmark
from servekit.errors import ReplayError
from servekit.package.evidence import RunHeader, parse_evidence
from servekit.package.files import RECEIPT_FILE, evidence_kit_path
from servekit.package.models import Package, Workload
from servekit.progress import PhasedTracker
from servekit.receipts.canonical import sha256_hex
from servekit.receipts.keys import TrustStore
from servekit.replay.host import host_facts
from servekit.replay.models import (
    REPLAY_FILE,
    KitRef,
    ReplayFile,
    ReplayHeader,
    WorkloadReplay,
)
from servekit.verify.archive import KitContents
from servekit.verify.kit import KitVerification, verify_kit


class ReplayOptions(BaseModel):
    """What ``servekit bench replay`` was asked to do."""

    model_config = ConfigDict(frozen=True, extra="forbid", arbitrary_types_allowed=True)

    kit: Path
    trust: TrustStore
    endpoint: str
    out: Path
    model: str | None = Field(default=None, description="Default: the name the publisher ran.")
    workloads: tuple[str, ...] = Field(default=(), description="Default: every workload.")
    runs: int = Field(default=1, ge=1)
    gpus: int | None = Field(default=None, ge=1, description="Default: the package's GPU count.")
    timeout_s: float = Field(default=600.0, gt=0)
    loop: LoopKind = LoopKind.AUTO
    force: bool = False


@dataclass(frozen=True)
class ReplayPlan:
    """A verified kit and one harness configuration per workload to replay."""

    options: ReplayOptions
    kit: KitRef
    configs: tuple[tuple[Workload, RunConfig], ...]
    skipped: tuple[str, ...]

    @property
    def total_requests(self) -> int:
        return sum(c.total_requests for _, c in self.configs)


def kit_ref(verified: KitVerification, receipt: bytes) -> KitRef:
    return KitRef(
        package=verified.package_id,
        version=verified.version,
        publisher=verified.publisher,
        publisher_key_id=verified.key_id,
        receipt_sha256=sha256_hex(receipt),
        kit_digest=verified.kit_digest,
    )


def recorded_header(kit: KitContents, package: Package, workload: str) -> RunHeader | None:
    """The run header of the publisher's first run of ``workload``, when the kit has one."""
    for run in package.measurements.runs:
        data = kit.get(evidence_kit_path(run.file))
        if run.workload == workload and data is not None:
            first = data.decode("utf-8").splitlines()[:1]
            return parse_evidence(Path(evidence_kit_path(run.file)), first).header
    return None


def _selected(package: Package, wanted: tuple[str, ...]) -> tuple[list[Workload], list[str]]:
    known = {w.id for w in package.workloads}
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise ReplayError(
            f"the kit has no workload {', '.join(unknown)}",
            hint=f"its workloads: {', '.join(sorted(known))}",
        )
    chosen = [w for w in package.workloads if not wanted or w.id in wanted]
    return chosen, [w.id for w in package.workloads if w not in chosen]


def run_config(
    options: ReplayOptions, package: Package, workload: Workload, recorded: RunHeader | None
) -> RunConfig:
    """The harness configuration that replays ``workload`` as recorded."""
    model = options.model or (recorded.model if recorded else None)
    return RunConfig(
        endpoint=options.endpoint,
        model=model or package.serve.served_model_name or package.model.repo,
        api=workload.api,
        prompt_min=workload.prompt_tokens.min,
        prompt_max=workload.prompt_tokens.max,
        output_tokens=workload.output_tokens,
        concurrencies=workload.concurrencies,
        requests=workload.measured_requests,
        warmup=workload.warmup_requests,
        seed=workload.seed,
        runs=options.runs,
        gpus=options.gpus or package.hardware.target.count,
        request_rate=recorded.request_rate if recorded else None,
        out=options.out / workload.id,
        timeout_s=options.timeout_s,
        loop=options.loop,
        force=options.force,
    )


def prepare_replay(options: ReplayOptions) -> ReplayPlan:
    """Steps 1-3: verify the kit and plan one harness run per chosen workload."""
    verified = verify_kit(options.kit, options.trust)  # 1
    kit, package = verified.contents, verified.package  # 2: the verified bytes
    chosen, skipped = _selected(package, options.workloads)  # 3
    configs = tuple(
        (w, run_config(options, package, w, recorded_header(kit, package, w.id))) for w in chosen
    )
    receipt = kit.get(RECEIPT_FILE) or b""
    return ReplayPlan(options, kit_ref(verified, receipt), configs, tuple(skipped))


def _replayed(out: Path, workload: Workload, files: list[Path]) -> WorkloadReplay:
    entries = tuple(
        ReplayFile(file=f.relative_to(out).as_posix(), sha256=sha256_hex(f.read_bytes()))
        for f in files
    )
    return WorkloadReplay(id=workload.id, concurrencies=workload.concurrencies, files=entries)


def run_replay(plan: ReplayPlan, tracker: PhasedTracker) -> ReplayHeader:
    """Steps 4-5: run every planned workload, then write ``replay.json``."""
    options = plan.options
    target = options.out / REPLAY_FILE
    if target.exists() and not options.force:
        raise ReplayError(
            f"{target} already exists", hint="choose another --out, or pass --force to overwrite"
        )
    started = dt.datetime.now(dt.UTC)
    workloads = tuple(
        _replayed(options.out, w, run_benchmark(config, tracker)) for w, config in plan.configs
    )
    first = plan.configs[0][1] if plan.configs else None
    header = ReplayHeader(
        kit=plan.kit,
        kit_source=str(options.kit),
        endpoint=options.endpoint,
        model=first.model if first else (options.model or ""),
        gpus=first.gpus if first else (options.gpus or 1),
        servekit_version=__version__,
        started_at=started.isoformat(),
        ended_at=dt.datetime.now(dt.UTC).isoformat(),
        host=host_facts(options.endpoint),
        workloads=workloads,
        skipped=plan.skipped,
    )
    options.out.mkdir(parents=True, exist_ok=True)
    target.write_text(header.model_dump_json(indent=2) + "\n", encoding="utf-8")
    return header
