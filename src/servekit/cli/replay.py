"""``servekit bench replay`` / ``bench compare`` and ``servekit verify reproduction``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from servekit.cli.choices import LoopName
from servekit.errors import RegressionError

if TYPE_CHECKING:  # the library loads when a command runs, not to parse its arguments
    from servekit.replay import Comparison
    from servekit.replay.models import FigureComparison
    from servekit.replay.reproduction import VerifiedReproduction

REPRODUCTION_FILE = "reproduction.dsse.json"
"""``servekit.replay.reproduction.REPRODUCTION_FILE``, for the help text (start-up)."""


def replay_command(
    kit: Path = typer.Argument(..., help="KIT.tar.gz, or an unpacked kit directory."),
    trust: Path = typer.Option(..., "--trust", help="The publisher's key or trust store."),
    endpoint: str = typer.Option(
        ..., metavar="URL", help="Your endpoint's base URL, e.g. http://127.0.0.1:8000"
    ),
    out: Path = typer.Option(..., "--out", help="Directory for replay.json and the evidence."),
    model: str | None = typer.Option(
        None,
        metavar="NAME",
        help="Model name your server serves (default: the name the publisher measured).",
    ),
    workload: list[str] = typer.Option(
        [], "--workload", metavar="ID", help="Replay only this workload (repeatable; default: all)."
    ),
    runs: int = typer.Option(1, min=1, help="Repeat each workload's grid; one file per run."),
    gpus: int | None = typer.Option(
        None, min=1, help="GPUs behind your endpoint (default: the package's GPU count)."
    ),
    timeout: float = typer.Option(
        600.0, metavar="SECONDS", help="Read timeout per request, seconds."
    ),
    loop: LoopName = typer.Option("auto", help="Client event loop."),
    force: bool = typer.Option(False, "--force", help="Overwrite an earlier replay in --out."),
    as_json: bool = typer.Option(False, "--json", help="Print the replay's files as JSON."),
) -> None:
    """Verify a kit, then re-run every workload of its package exactly as recorded
    against your endpoint, writing raw evidence and replay.json for `bench compare`."""
    from servekit.bench.loop import LoopKind
    from servekit.cli.output import plain, print_json, stderr, stdout
    from servekit.progress import track_count
    from servekit.receipts.keys import load_trust_store
    from servekit.replay import ReplayOptions, prepare_replay, run_replay
    from servekit.seams import output_dir

    options = ReplayOptions(
        kit=kit,
        trust=load_trust_store(trust, bare_key=True),
        endpoint=endpoint,
        out=out,
        model=model,
        workloads=tuple(workload),
        runs=runs,
        gpus=gpus,
        timeout_s=timeout,
        loop=LoopKind(loop),
        force=force,
    )
    with output_dir(out, force=True):  # an earlier replay is refused by run_replay itself
        plan = prepare_replay(options)
        stderr.print(
            f"verified {plain(str(kit))}: {plain(plan.kit.package)} {plain(plan.kit.version)}"
        )
        with track_count("replaying", plan.total_requests, unit="requests") as tracker:
            header = run_replay(plan, tracker)
    for w in header.workloads:
        stderr.print(f"replayed {plain(w.id)}: {plain(', '.join(f.file for f in w.files))}")
    for skipped in header.skipped:
        stderr.print(f"[yellow]not replayed: {plain(skipped)}[/]")
    engine = header.host.engine_version or "unknown engine"
    if as_json:
        workloads = {w.id: [f.file for f in w.files] for w in header.workloads}
        print_json(
            {
                "ok": True,
                "replay": str(out / "replay.json"),
                "engine": engine,
                "workloads": workloads,
                "skipped": list(header.skipped),
            }
        )
        return
    stdout.print(f"wrote {plain(str(out))}/replay.json ({plain(engine)} at {plain(endpoint)})")
    stdout.print(f"next: servekit bench compare {plain(str(kit))} {plain(str(out))}")


def _number(value: float | None, decimals: int) -> str:
    return "-" if value is None else f"{value:.{decimals + 1}f}"


def _verdict_text(f: FigureComparison) -> str:
    from servekit.replay import Verdict

    if f.verdict is Verdict.REPORTED:
        return "reported: here is your measurement"
    if f.verdict is Verdict.NOT_REPLAYED:
        return "not replayed"
    styles = {Verdict.WITHIN: "green", Verdict.BETTER: "green", Verdict.WORSE: "red"}
    style = styles.get(f.verdict, "yellow")
    return f"[{style}]{f.verdict.value}[/]"


def _render_stacked(result: Comparison, title: str) -> None:
    """One block per figure: for terminals too narrow for the table."""
    from servekit.cli.output import plain, stdout

    stdout.print(f"[italic]{plain(title)}[/]")
    for f in result.figures:
        diff = "-" if f.diff_pct is None else f"{f.diff_pct:+.2f} %"
        yours = "-" if f.buyer is None else f"{_number(f.buyer, f.decimals)} {plain(f.unit)}"
        stdout.print(f"[bold]{plain(f.label)}[/]: {_verdict_text(f)}")
        stdout.print(
            f"  {plain(f.workload or '-')} @ c={f.concurrency}: published "
            f"{f.published:.{f.decimals}f} {plain(f.unit)}, yours {yours}, diff {diff}"
        )


def render_comparison(result: Comparison) -> None:
    from rich.table import Table

    from servekit.cli.output import plain, stacked, stdout

    title = f"{result.kit.package} {result.kit.version}: published vs your replay"
    if stacked():
        _render_stacked(result, title)
        _render_outcome(result)
        return
    table = Table(title=title, title_justify="left")
    for column in ("figure", "workload", "conc", "published", "yours", "diff %", "verdict"):
        table.add_column(column)
    for f in result.figures:
        diff = "-" if f.diff_pct is None else f"{f.diff_pct:+.2f}"
        published = f"{f.published:.{f.decimals}f} {f.unit}"
        table.add_row(
            plain(f.label),
            plain(f.workload or "-"),
            str(f.concurrency),
            published,
            _number(f.buyer, f.decimals),
            diff,
            _verdict_text(f),
        )
    stdout.print(table)
    _render_outcome(result)


def _render_outcome(result: Comparison) -> None:
    from servekit.cli.output import plain, stdout

    stdout.print(
        f"tolerance ±{result.tolerance_pct:g} % (lower latency and higher throughput are better)"
    )
    for w in result.workloads:
        if not w.replayed:
            stdout.print(f"[yellow]workload {plain(w.id)}: not replayed[/]")
        elif w.failed:
            stdout.print(f"[red]workload {plain(w.id)}: {w.failed} request(s) failed[/]")
    if result.reproduced:
        stdout.print("[green]✓ reproduced: every replayed figure is within tolerance or better[/]")


NOTHING_TO_COMPARE = "nothing to compare: every figure is reported; here is your measurement"


def _regression(result: Comparison) -> RegressionError:
    failing = [f for f in result.figures if f.verdict.fails]
    named = ", ".join(f"{f.id} ({f.verdict.value})" for f in failing)
    if failing:
        message = f"{len(failing)} figure(s) not reproduced: {named}"
    elif result.failed_requests:
        message = f"{result.failed_requests} replayed request(s) failed"
    else:
        message = "no figure was replayed"
    return RegressionError(
        message, hint="docs/replay.md explains each verdict and what to check on your side"
    )


def compare_command(
    kit: Path = typer.Argument(..., help="The kit that was replayed."),
    directory: Path = typer.Argument(..., help="The replay directory (bench replay --out)."),
    as_json: bool = typer.Option(False, "--json", help="Print the comparison as JSON."),
    tolerance: float | None = typer.Option(
        None,
        min=0.0,
        metavar="PCT",
        help="Tolerance in percent (default: the package's measurements.tolerance_pct).",
    ),
    sign: Path | None = typer.Option(
        None, "--sign", help="Sign the comparison as a reproduction with this private key."
    ),
    reproduction: Path | None = typer.Option(
        None, "--reproduction-out", help=f"Where --sign writes (default: DIR/{REPRODUCTION_FILE})."
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing --reproduction-out."),
) -> None:
    """Compare every figure of the kit with your replay, recomputed by the claim rules'
    own arithmetic: within tolerance, better or worse. Exit 0 when reproduced, and when
    every figure is reported (nothing to compare: your measurement is shown beside each);
    55 when not."""
    from servekit.cli.output import fail, plain, print_json, stderr, stdout
    from servekit.receipts.keys import load_signing_key
    from servekit.replay import compare, sign_reproduction
    from servekit.replay.compare import nothing_to_compare
    from servekit.seams import output_file

    target = reproduction or directory / REPRODUCTION_FILE
    if sign is not None and directory.is_dir():  # a missing DIR is compare's own error
        output_file(target, force=force, option="--reproduction-out")
    result = compare(kit, directory, tolerance_pct=tolerance)
    data = {"reproduced": result.reproduced, **result.model_dump(mode="json")}
    if not as_json:
        render_comparison(result)
    if sign is not None:
        target.write_bytes(sign_reproduction(result, load_signing_key(sign)))
        stderr.print(f"wrote the signed reproduction {plain(str(target))}")
    if not result.reproduced and nothing_to_compare(result):  # exit 0: nothing went wrong
        data["nothing_to_compare"] = True
        if not as_json:
            stdout.print(NOTHING_TO_COMPARE)
    elif not result.reproduced:
        raise fail(_regression(result), data, as_json=as_json)
    if as_json:
        print_json({"ok": True, **data})


def _render_reproduction(result: VerifiedReproduction) -> None:
    from servekit.cli.output import plain, stdout

    predicate = result.predicate
    kit, host = predicate.kit, predicate.host
    stdout.print(f"[green]✓ verified[/] reproduction signed by {result.key_id}")
    stdout.print(f"  kit:      {plain(kit.package)} {plain(kit.version)} by {plain(kit.publisher)}")
    stdout.print(f"  receipt:  sha256:{kit.receipt_sha256}")
    gpus = ", ".join(g.name for g in host.gpus) or "no GPU visible through nvidia-smi"
    stdout.print(f"  host:     {plain(host.cpu or '-')}; {plain(gpus)}")
    stdout.print(f"  engine:   {plain(host.engine_version or 'unknown')}")
    counts: dict[str, int] = {}
    for f in predicate.figures:
        counts[f.verdict.value] = counts.get(f.verdict.value, 0) + 1
    stdout.print("  figures:  " + ", ".join(f"{n} {v}" for v, n in sorted(counts.items())))
    state = "[green]reproduced[/]" if predicate.reproduced else "[red]NOT reproduced[/]"
    stdout.print(f"  result:   {state} within ±{predicate.tolerance_pct:g} %")
    stdout.print(f"  checked:  {_checked(result)}")
    tol = result.kit_tolerance_pct
    if tol is not None and tol != predicate.tolerance_pct:
        again = "reproduced" if result.reproduced_at_kit_tolerance else "NOT reproduced"
        stdout.print(
            f"[yellow]  compared at ±{predicate.tolerance_pct:g} %, not the kit's own "
            f"±{tol:g} %: at the kit's tolerance it is {again}[/]"
        )


def _checked(result: VerifiedReproduction) -> str:
    if result.recomputed:
        return "signature, verdicts, the kit, and every figure recomputed from the evidence"
    if result.kit_checked:
        return "signature, verdicts and the kit (pass --replay to recompute the figures)"
    return "signature and verdicts (pass --kit and --replay to check the figures)"


def reproduction_command(
    file: Path = typer.Argument(..., help="A signed reproduction (reproduction.dsse.json)."),
    trust: Path = typer.Option(..., "--trust", help="The replayer's public key or trust store."),
    kit: Path | None = typer.Option(None, "--kit", help="Also check it is of this kit."),
    replay: Path | None = typer.Option(
        None, "--replay", help="Also check its evidence files against this replay directory."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the reproduction as JSON."),
) -> None:
    """Verify a signed reproduction offline: its signature, that each verdict follows from
    its numbers, and with --kit and --replay that it is this kit's and that every figure
    is what the bound evidence gives. Exit 0 when it verifies and records a reproduction."""
    from servekit.cli.output import print_json
    from servekit.receipts.keys import load_trust_store
    from servekit.replay import verify_reproduction

    result = verify_reproduction(
        file, load_trust_store(trust, bare_key=True), kit=kit, replay_dir=replay
    )
    predicate = result.predicate
    if as_json:
        checks = {
            "kit_checked": result.kit_checked,
            "recomputed": result.recomputed,
            "kit_tolerance_pct": result.kit_tolerance_pct,
            "reproduced_at_kit_tolerance": result.reproduced_at_kit_tolerance,
        }
        print_json(
            {
                "verified": True,
                "key_id": result.key_id,
                **checks,
                **predicate.model_dump(mode="json"),
            }
        )
    else:
        _render_reproduction(result)
    if not predicate.reproduced:
        raise RegressionError(
            "the reproduction is authentic, and it records figures that were not reproduced",
            hint="read its figures with --json",
        )
