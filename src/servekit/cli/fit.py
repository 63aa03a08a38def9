"""``servekit fit``: will this model fit these GPUs, predicted before anyone downloads it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

from servekit.cli.choices import KvDtypeName
from servekit.cli.output import plain, print_json, print_wrapped, stdout

if TYPE_CHECKING:  # the predictor loads when it runs, not for --help
    from servekit.fit import FitOptions, FitResult


def render_fit(result: FitResult) -> None:
    """The verdict first, then bytes per tensor class, then the reasons."""
    from rich.table import Table

    from servekit.fit.models import GIB

    opts = result.options
    layout = opts.parallelism
    where = f"{result.gpu.name}, TP {layout.tp}" + (f" x DP {layout.dp}" if layout.dp > 1 else "")
    where += (" with EP" if layout.ep else "") + (f", PP {layout.pp}" if layout.pp > 1 else "")
    verdict = "[green]fits[/]" if result.fits else "[red]does not fit[/]"
    stdout.print(
        f"{plain(result.model)} ({result.architecture}) on {plain(where)}: {verdict}, "
        f"margin {result.margin_bytes / GIB:+.2f} GiB per GPU"
    )
    table = Table(title="per GPU (the busiest)", title_justify="left")
    for column in ("what", "GiB"):
        table.add_column(column)
    for c in result.by_class:
        table.add_row(plain(c.tensor_class.value), f"{c.bytes_per_gpu / GIB:.3f}")
    table.add_row("weights", f"{result.weights_bytes_per_gpu / GIB:.3f}")
    table.add_row("engine reserve (estimated)", f"{result.overhead_bytes_per_gpu / GIB:.3f}")
    table.add_row("KV cache", f"{result.kv_cache_bytes_per_gpu / GIB:.3f}")
    stdout.print(table)
    stdout.print(f"KV cache per token per GPU: {result.kv.bytes_per_token_per_gpu:,} bytes")
    for reason in result.reasons:
        print_wrapped(f"- {reason}")


def _options(
    gpu: str | None,
    tp: int,
    dp: int,
    pp: int,
    ep: bool,
    max_len: int | None,
    util: float,
    kv: KvDtypeName,
    language_only: bool,
) -> FitOptions | None:
    from servekit.fit import FitOptions, KvDtype, Parallelism

    if gpu is None:
        return None
    layout = Parallelism(tp=tp, dp=dp, pp=pp, ep=ep)
    return FitOptions(
        gpu=gpu,
        parallelism=layout,
        max_model_len=max_len,
        gpu_memory_utilization=util,
        kv_cache_dtype=KvDtype(kv),
        language_only=language_only,
    )


def fit(
    source: str | None = typer.Argument(
        None, help="A local model directory, or REPO@COMMIT on the Hub (headers only)."
    ),
    package: Path | None = typer.Option(
        None, "--package", help="A package directory: its pin, serve flags and hardware target."
    ),
    gpu: str | None = typer.Option(None, "--gpu", help="GPU name, e.g. H200 (see docs/fit.md)."),
    tp: int = typer.Option(1, "--tp", min=1, help="Tensor parallel size."),
    dp: int = typer.Option(1, "--dp", min=1, help="Data parallel size."),
    pp: int = typer.Option(1, "--pp", min=1, help="Pipeline parallel size."),
    ep: bool = typer.Option(False, "--ep", help="Expert parallelism (MoE): experts over TP x DP."),
    max_model_len: int | None = typer.Option(
        None, "--max-model-len", min=1, help="Longest request; default: the model's own."
    ),
    util: float = typer.Option(
        0.92,
        "--gpu-memory-utilization",
        min=0.01,
        max=1.0,
        metavar="FRACTION",
        help="vLLM's memory fraction.",
    ),
    kv_dtype: KvDtypeName = typer.Option("auto", "--kv-cache-dtype", help="auto or fp8."),
    language_only: bool = typer.Option(
        False, "--language-only", help="Do not load a vision tower (vLLM --language-model-only)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the prediction as JSON."),
) -> None:
    """Predict whether a model fits GPUs: weights per GPU, KV cache, verdict and margin.

    Reads config.json and the safetensors headers (locally, or by HTTP range reads on
    the Hub: no weight bytes are downloaded); with only config.json it estimates and
    says so. With --package it predicts the package's own target (its pin, serve
    flags and GPU). Exit status: 0 whether or not the model fits (read "fits"), 45-49
    when the model or the layout cannot be sized (docs/errors.md).
    """
    from servekit.fit import PackageFit
    from servekit.fit.run import run

    options = _options(gpu, tp, dp, pp, ep, max_model_len, util, kv_dtype, language_only)
    outcome = run(source, options=options, package_dir=package)
    result = outcome.result if isinstance(outcome, PackageFit) else outcome
    if as_json:
        print_json(outcome.as_dict() if isinstance(outcome, PackageFit) else result.as_json())
        return
    render_fit(result)
    if isinstance(outcome, PackageFit) and outcome.floor_gib is not None:
        stdout.print(f"measured floor: {outcome.floor_gib:.2f} GiB of weights per GPU")
        if outcome.contradiction:
            stdout.print(f"[red]✗ {plain(outcome.contradiction)}[/]")
