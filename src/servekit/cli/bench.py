"""``servekit bench``: measure an endpoint, summarize evidence, import other harnesses' files."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from servekit.cli.choices import ApiName, LoopName
from servekit.cli.replay import compare_command, replay_command
from servekit.errors import UsageError

if TYPE_CHECKING:  # the library loads after the arguments are checked (docs/performance.md)
    from servekit.bench.runner import RunConfig
    from servekit.bench.summary import SummaryReport

app = typer.Typer(
    help="Benchmark an OpenAI-compatible endpoint into raw evidence, and summarize it.",
    no_args_is_help=True,
)
import_app = typer.Typer(
    help="Convert another harness's result file into servekit evidence.", no_args_is_help=True
)
app.add_typer(import_app, name="import")


def _token_range(text: str) -> tuple[int, int]:
    low, sep, high = text.partition(":")
    hint = "e.g. --input-tokens 1000:1200 (or 1000 for a fixed length)"
    try:
        bounds = int(low), int(high if sep else low)
    except ValueError as exc:
        raise UsageError(f"--input-tokens '{text}' is not MIN:MAX", hint=hint) from exc
    if bounds[0] < 1 or bounds[0] > bounds[1]:
        raise UsageError(
            f"--input-tokens '{text}': MIN must be at least 1 and at most MAX", hint=hint
        )
    return bounds


def _concurrencies(text: str) -> tuple[int, ...]:
    hint = "e.g. --concurrency 1,8,64"
    try:
        values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError as exc:
        raise UsageError(
            f"--concurrency '{text}' is not a comma-separated list", hint=hint
        ) from exc
    if not values or min(values) < 1:
        raise UsageError(f"--concurrency '{text}': every concurrency must be at least 1", hint=hint)
    return values


def _positive(value: float | None) -> float | None:
    if value is not None and value <= 0:
        raise typer.BadParameter(f"must be greater than 0 (got {value:g})")
    return value


def _run_options() -> dict[str, str]:
    from servekit.bench.runner import RunConfig
    from servekit.seams import option_names

    return option_names(
        RunConfig.model_fields,
        prompt_min="--input-tokens MIN",
        prompt_max="--input-tokens MAX",
        concurrencies="--concurrency",
        timeout_s="--timeout",
        connect_timeout_s="--connect-timeout",
        first_byte_timeout_s="--first-byte-timeout",
        serve="--serve-config",
    )


def _fmt(value: object, digits: int = 1) -> str:
    return (
        f"{value:.{digits}f}"
        if isinstance(value, float)
        else ("-" if value is None else str(value))
    )


def _render_stacked(report: SummaryReport, title: str) -> None:
    """One block per (run, concurrency): for terminals too narrow for the table."""
    from servekit.cli.output import plain, stdout

    stdout.print(f"[italic]{title}[/]")
    for g in report.groups:
        m = g.metrics()
        stdout.print(f"[bold]{plain(g.run)} @ c={g.concurrency}[/]: {_fmt(m['completed'])} ok, "
                     f"{_fmt(m['failed'])} failed, {_fmt(m['duration'], 2)} s")  # fmt: skip
        stdout.print(
            f"  req/s {_fmt(m['request_throughput'], 2)}, out tok/s "
            f"{_fmt(m['output_throughput'])}, per GPU {_fmt(m['output_throughput_per_gpu'])}"
        )
        stdout.print(
            f"  TTFT p50/p99 {_fmt(m['median_ttft_ms'], 2)}/{_fmt(m['p99_ttft_ms'], 2)} ms, "
            f"TPOT p50 {_fmt(m['median_tpot_ms'], 2)}, ITL p50 {_fmt(m['median_itl_ms'], 2)}"
        )
        stdout.print(
            f"  E2EL p50/p99 {_fmt(m['median_e2el_ms'], 2)}/{_fmt(m['p99_e2el_ms'], 2)} ms"
            + (f"; flags: {plain(', '.join(g.flags))}" if g.flags else "")
        )


def render_summary(report: SummaryReport) -> None:
    from rich.table import Table

    from servekit.cli.output import plain, stacked, stdout

    simulator = any(g.simulator for g in report.groups)
    title = "benchmark summary" + (" — SIMULATOR results, not a real engine" if simulator else "")
    if stacked():
        _render_stacked(report, title)
        _render_agreements(report, short=True)
        return
    table = Table(title=title, title_justify="left")
    columns: tuple[str, ...] = ("run", "conc", "ok", "fail", "dur s", "req/s", "out tok/s", "/GPU")
    columns += ("TTFT p50", "TTFT p99", "TPOT p50", "ITL p50", "E2EL p50", "E2EL p99", "flags")
    for column in columns:
        table.add_column(column)
    for g in report.groups:
        m = g.metrics()
        row = [g.run, str(g.concurrency), _fmt(m["completed"]), _fmt(m["failed"])]
        row += [_fmt(m["duration"], 2), _fmt(m["request_throughput"], 2)]
        row += [_fmt(m["output_throughput"]), _fmt(m["output_throughput_per_gpu"])]
        keys = ("median_ttft_ms", "p99_ttft_ms", "median_tpot_ms", "median_itl_ms")
        row += [_fmt(m[k], 2) for k in (*keys, "median_e2el_ms", "p99_e2el_ms")]
        row.append(plain(", ".join(g.flags)))
        table.add_row(*row)
    stdout.print(table)
    _render_agreements(report)


def _render_agreements(report: SummaryReport, *, short: bool = False) -> None:
    from servekit.cli.output import stdout

    stdout.print("times in ms; percentiles: numpy linear (as vLLM bench serve)")
    for a in report.agreements:
        worst = max(a.max_difference_pct.items(), key=lambda kv: kv[1], default=("-", 0.0))
        verdict = "[green]agree[/]" if a.agree else "[red]DISAGREE[/]"
        stdout.print(
            (f"c={a.concurrency}: " if short else f"concurrency {a.concurrency}: runs ")
            + f"{', '.join(a.runs)} {verdict} within "
            f"{a.tolerance_pct:g} % (largest: {worst[0]} {worst[1]:.2f} %)"
        )


@app.command("run")
def run_command(
    endpoint: str = typer.Option(..., metavar="URL", help="Base URL, e.g. http://127.0.0.1:8000"),
    model: str = typer.Option(..., metavar="NAME", help="Model name the server serves."),
    api: ApiName = typer.Option("completions", help="completions or chat."),
    input_tokens: str = typer.Option(
        ..., metavar="MIN:MAX", help="Prompt length range MIN:MAX (server tokens)."
    ),
    output_tokens: int = typer.Option(..., min=1, metavar="N", help="Output tokens per request."),
    concurrency: str = typer.Option(
        "1", metavar="C1,C2,...", help="Comma-separated concurrencies, e.g. 1,8,64."
    ),
    requests: int = typer.Option(
        ..., min=1, metavar="N", help="Measured requests per concurrency per run."
    ),
    warmup: int = typer.Option(
        0, min=0, help="Warmup requests per concurrency (own prompts, excluded)."
    ),
    seed: int = typer.Option(0, help="Seed of prompts, lengths and arrivals."),
    runs: int = typer.Option(1, min=1, help="Repeat the grid; one evidence file per run."),
    gpus: int = typer.Option(1, min=1, help="GPUs behind the endpoint (for per-GPU throughput)."),
    request_rate: float | None = typer.Option(
        None,
        metavar="RPS",
        callback=_positive,
        help="Poisson arrivals per second (default: closed loop).",
    ),
    out: Path = typer.Option(
        ..., metavar="DIR", help="Directory for run-1.jsonl, run-2.jsonl, ..."
    ),
    timeout: float = typer.Option(
        600.0,
        callback=_positive,
        metavar="SECONDS",
        help="Total deadline per request: connect, wait and stream (keep-alive comments do "
        "not extend it).",
    ),
    connect_timeout: float = typer.Option(
        30.0, callback=_positive, metavar="SECONDS", help="Deadline to open a connection."
    ),
    first_byte_timeout: float | None = typer.Option(
        None,
        callback=_positive,
        metavar="SECONDS",
        help="Deadline for the first response byte (default: --timeout).",
    ),
    max_error_rate: float = typer.Option(
        0.0,
        min=0,
        max=1,
        metavar="SHARE",
        help="Exit 60 when a larger share (0-1) of measured requests failed.",
    ),
    tokenizer: Path | None = typer.Option(
        None, help="tokenizer.json (or its directory) to size prompts; needs `tokenizers`."
    ),
    simulator: bool = typer.Option(
        False, "--simulator", help="Label the results as simulator results."
    ),
    hardware: str | None = typer.Option(
        None,
        metavar="HARDWARE",
        help="Hardware behind the endpoint, as the package names it, e.g. '1x H200'.",
    ),
    serve_command: str | None = typer.Option(
        None,
        metavar="COMMAND",
        help="The engine's serve command line (with leading NAME=VALUE env), recorded.",
    ),
    serve_config_file: Path | None = typer.Option(
        None,
        "--serve-config",
        help="YAML/JSON {argv, env} or a package.yaml: the serve configuration, recorded.",
    ),
    loop: LoopName = typer.Option("auto", help="Client event loop."),
    force: bool = typer.Option(False, "--force", help="Overwrite existing run files."),
    resume: bool = typer.Option(
        False,
        "--resume",
        help="Continue an interrupted or killed run: keep its whole run files, recover "
        "its journal, measure the rest.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the summary as JSON."),
) -> None:
    """Measure each concurrency (warmups, then measured requests) and write the raw
    per-request evidence that `servekit package check` recomputes figures from."""
    from servekit.seams import parse_url

    # 1. the arguments, before any library loads: an error here starts fast
    parse_url(endpoint)
    low, high = _token_range(input_tokens)
    levels = _concurrencies(concurrency)
    if max(levels) > requests:
        raise UsageError(
            f"--concurrency {max(levels)} is larger than --requests {requests}: at most "
            f"{requests} requests can ever be in flight",
            hint="raise --requests to at least the highest concurrency, or lower --concurrency",
        )
    # 2. the configuration, then the run
    from servekit.bench.loop import LoopKind
    from servekit.bench.runner import RunConfig
    from servekit.bench.serveconf import serve_config
    from servekit.package.models import Api
    from servekit.seams import validating, validation_problems

    with validating(lambda exc: UsageError(validation_problems(exc, _run_options()))):
        config = RunConfig(
            endpoint=endpoint,
            model=model,
            api=Api(api),
            prompt_min=low,
            prompt_max=high,
            output_tokens=output_tokens,
            concurrencies=levels,
            requests=requests,
            warmup=warmup,
            seed=seed,
            runs=runs,
            gpus=gpus,
            request_rate=request_rate,
            out=out,
            timeout_s=timeout,
            connect_timeout_s=connect_timeout,
            first_byte_timeout_s=first_byte_timeout,
            max_error_rate=max_error_rate,
            tokenizer=tokenizer,
            simulator=simulator,
            hardware=hardware,
            serve=serve_config(serve_command, serve_config_file),
            loop=LoopKind(loop),
            force=force,
            resume=resume,
        )
    _run(config, as_json=as_json)


def _run(config: RunConfig, *, as_json: bool) -> None:
    """Run the benchmark, then summarize exactly the files its manifest names."""
    from servekit.bench.runner import run_benchmark
    from servekit.bench.summary import summarize_path
    from servekit.cli.output import fail, plain, stderr
    from servekit.errors import ErrorRateError
    from servekit.progress import track_count
    from servekit.seams import output_dir

    def notify(message: str) -> None:
        stderr.print(plain(message))

    # run files are refused one by one without --force (the directory may hold others)
    stderr.print(
        f"probing {plain(config.endpoint)}: version, fixed-length support, prompt calibration"
    )
    with (
        output_dir(config.out, force=True),
        track_count("bench run", config.total_requests, unit="requests") as tracker,
    ):
        files = run_benchmark(config, tracker, notify)
    stderr.print(
        f"wrote {plain(', '.join(str(f) for f in files))} and {plain(str(config.out / 'manifest.json'))}"
    )
    report = summarize_path(config.out)
    for note in report.notes:
        notify(note)
    failed, total = report.failed_share()
    if total and failed / total > config.max_error_rate:
        if not as_json:
            render_summary(report)
        error = ErrorRateError(
            f"{failed} of {total} measured requests failed ({failed / total:.1%}), above "
            f"--max-error-rate {config.max_error_rate:g}",
            hint="the evidence is written; read the errors with `servekit bench summary "
            "--json`, fix the server or the options, or raise --max-error-rate",
        )
        raise fail(error, {"groups": report.as_json()}, as_json=as_json)
    _show(report, as_json)


def _show(report: SummaryReport, as_json: bool) -> None:
    from servekit.cli.output import print_json

    if as_json:
        print_json(report.as_json())
    else:
        render_summary(report)


@app.command("summary")
def summary_command(
    paths: list[Path] = typer.Argument(
        ...,
        metavar="PATH...",
        help="Evidence files, or bench run --out directories (the files their manifest names).",
    ),
    as_json: bool = typer.Option(False, "--json", help="One JSON object per (run, concurrency)."),
    tolerance: float = typer.Option(
        2.0, metavar="PCT", help="Repeated runs must agree within this percent."
    ),
    goodput: str | None = typer.Option(
        None, metavar="SLOS", help="SLOs for request_goodput, e.g. ttft:500,tpot:50 (ms)."
    ),
) -> None:
    """Recompute every metric per run and concurrency from raw evidence, with vLLM
    bench serve's key names, and check that repeated runs agree."""
    from servekit.bench.summary import parse_slos, summarize_path
    from servekit.cli.output import plain, stderr

    report = summarize_path(paths, tolerance_pct=tolerance, slos=parse_slos(goodput))
    for note in report.notes:
        stderr.print(plain(note))
    _show(report, as_json)


@import_app.command("vllm")
def import_vllm_command(
    result: Path = typer.Argument(..., help="vllm bench serve --save-result --save-detailed JSON."),
    out: Path = typer.Option(..., "--out", "-o", help="Evidence file to write (.jsonl)."),
    run: str = typer.Option("vllm-1", help="Run id for the records."),
    gpus: int = typer.Option(1, min=1, help="GPUs behind the endpoint that was measured."),
    concurrency: int | None = typer.Option(
        None, min=1, help="Concurrency label (default: the result's max_concurrency)."
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing --out file."),
    as_json: bool = typer.Option(False, "--json", help="Print what was written as JSON."),
) -> None:
    """Convert a vLLM bench serve detailed result into servekit's raw evidence, and say
    which fields that format lacks."""
    from servekit.bench.importers import import_vllm
    from servekit.cli.output import plain, print_json, stderr
    from servekit.errors import BenchError
    from servekit.package.evidence import dump_evidence
    from servekit.seams import output_file, write_text

    output_file(out, force=force, option="--out")
    imported = import_vllm(result, run=run, gpus=gpus, concurrency=concurrency)
    text = dump_evidence(imported.header, imported.records)
    write_text(out, text, lambda message: BenchError(message, hint="check --out"))
    missing = list(imported.header.missing_fields)
    if as_json:
        print_json(
            {"ok": True, "out": str(out), "requests": len(imported.records), "lacks": missing}
        )
        return
    stderr.print(f"wrote {plain(str(out))}: {len(imported.records)} requests")
    stderr.print("[yellow]the vLLM result format lacks:[/]")
    for field in missing:
        stderr.print(f"  - {plain(field)}")


app.command("replay")(replay_command)
app.command("compare")(compare_command)
