"""``servekit sim``: run the engine simulator (an OpenAI-compatible streaming server)."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

import typer

from servekit.cli.choices import FaultName, LoopName
from servekit.engines.sim import NOISE_SEED_ENV
from servekit.errors import BenchError, UsageError

if TYPE_CHECKING:  # the simulator loads when it serves, not for --help
    from pydantic import ValidationError

    from servekit.bench.sim.perf import PerfModel

app = typer.Typer(
    help="The engine simulator: exact, configurable timing for tests and demos. Results "
    "measured against it are labelled simulator results everywhere.",
    no_args_is_help=True,
)


_PERF = "Performance model (off unless one of these is given)"
_PERF_FIELDS = {
    "max_num_seqs": "max_num_seqs", "max_num_batched_tokens": "max_num_batched_tokens",
    "enable_chunked_prefill": "chunked_prefill", "gpu_memory_utilization": "gpu_memory_utilization",
    "kv_tokens": "kv_tokens", "oom_above": "oom_above", "pad_cost": "pad_cost",
    "chunk_step_ms": "chunk_step_ms", "step_us_per_token": "step_us_per_token", "noise": "noise",
}  # fmt: skip


def _perf_option(metavar: str, help: str) -> Any:
    """An option of the performance model: unset (None) unless given."""
    return typer.Option(None, metavar=metavar, help=help, rich_help_panel=_PERF)


def _perf(options: dict[str, object]) -> PerfModel | None:
    """The performance model when any of its options is given (else the plain simulator)."""
    from servekit.bench.sim.perf import PerfModel

    given = {
        field: options[name] for name, field in _PERF_FIELDS.items() if options[name] is not None
    }
    if not given:
        return None
    return PerfModel.model_validate({**given, "noise_seed": options["noise_seed"]})


def _invalid_options(exc: ValidationError) -> UsageError:
    from servekit.bench.sim import SimConfig
    from servekit.bench.sim.perf import PerfModel
    from servekit.seams import option_names, validation_problems

    names = option_names(SimConfig.model_fields, role_chunk="--no-role-chunk")
    names |= option_names(PerfModel.model_fields, chunked_prefill="--enable-chunked-prefill")
    return UsageError(validation_problems(exc, names))


@app.command("serve")
def serve_command(
    port: int = typer.Option(
        8000, min=0, max=65535, metavar="PORT", help="TCP port (0 picks a free one)."
    ),
    host: str = typer.Option("127.0.0.1", metavar="ADDRESS", help="Address to listen on."),
    model: str = typer.Option("servekit-sim", metavar="NAME", help="The model name it serves."),
    ttft_ms: float = typer.Option(
        120.0, metavar="MS", help="Prefill time before the first token, ms."
    ),
    prefill_us_per_token: float = typer.Option(
        0.0, metavar="US", help="Extra prefill per prompt token, µs."
    ),
    itl_ms: float = typer.Option(15.0, metavar="MS", help="Decode interval per token, ms."),
    batch_slowdown: float = typer.Option(
        0.0,
        metavar="FRACTION",
        help="Decode interval grows by this fraction per extra running request.",
    ),
    jitter: float = typer.Option(
        0.0, metavar="FRACTION", help="Uniform jitter on each interval, as a fraction."
    ),
    seed: int = typer.Option(0, help="Seed of the jitter."),
    max_concurrency: int = typer.Option(
        0, help="Requests running at once; more queue (0: no limit)."
    ),
    max_model_len: int = typer.Option(
        131072, metavar="TOKENS", help="Prompt + output tokens allowed."
    ),
    natural_length: int = typer.Option(
        0,
        metavar="TOKENS",
        help="Without ignore_eos/min_tokens, stop after this many tokens (0: never early).",
    ),
    no_usage: bool = typer.Option(
        False, "--no-usage", help="Ignore stream_options: never send usage."
    ),
    reject_ignore_eos: bool = typer.Option(
        False,
        "--reject-ignore-eos",
        help="Answer 422 to ignore_eos/min_tokens (as transformers serve does).",
    ),
    no_role_chunk: bool = typer.Option(
        False, "--no-role-chunk", help="Chat: no role-only first chunk."
    ),
    fault: FaultName | None = typer.Option(None, help="Inject this fault into selected requests."),
    fault_every: int = typer.Option(1, metavar="N", help="Fault every Nth request."),
    fault_match: str | None = typer.Option(
        None, metavar="SUBSTRING", help="Fault only prompts containing this text."
    ),
    loop: LoopName = typer.Option("auto", help="Event loop (uvloop when installed)."),
    max_num_seqs: int | None = _perf_option("N", "Performance model: the batch limit (stock 256)."),
    max_num_batched_tokens: int | None = _perf_option(
        "TOKENS", "Performance model: tokens per step (stock 2048)."
    ),
    enable_chunked_prefill: bool | None = typer.Option(
        None,
        "--enable-chunked-prefill/--no-enable-chunked-prefill",
        help="Performance model: chunked prefill (stock on).",
        rich_help_panel=_PERF,
    ),
    gpu_memory_utilization: float | None = _perf_option(
        "FRACTION", "Performance model: memory share (stock 0.9)."
    ),
    kv_tokens: int | None = _perf_option(
        "TOKENS", "Simulated GPU: KV tokens per unit of memory share (10000)."
    ),
    oom_above: float | None = _perf_option(
        "FRACTION", "Simulated GPU: memory share above which start fails (0.96)."
    ),
    pad_cost: float | None = _perf_option(
        "FRACTION", "Simulated GPU: step cost of idle batch slots (0.5)."
    ),
    chunk_step_ms: float | None = _perf_option(
        "MS", "Simulated GPU: cost of each further prefill chunk (8)."
    ),
    step_us_per_token: float | None = _perf_option(
        "US", "Simulated GPU: decode-step cost per budgeted token (0.5)."
    ),
    noise: float | None = _perf_option(
        "SIGMA", "Simulated host: run-to-run noise, one lognormal draw per start."
    ),
    noise_seed: str | None = typer.Option(
        None,
        metavar="SEED",
        envvar=NOISE_SEED_ENV,
        help="Simulated host: the seed of this start's noise draw (default: random).",
        rich_help_panel=_PERF,
    ),
) -> None:
    """Serve /v1/completions, /v1/chat/completions, /v1/models, /tokenize, /version and
    /metrics with a known timing model until interrupted (Ctrl-C)."""
    from servekit.bench.loop import LoopKind, run
    from servekit.bench.sim import Fault, SimConfig, serve_forever
    from servekit.cli.output import stderr
    from servekit.seams import validating

    with validating(_invalid_options):
        config = SimConfig(
            model=model,
            ttft_ms=ttft_ms,
            prefill_us_per_token=prefill_us_per_token,
            itl_ms=itl_ms,
            batch_slowdown=batch_slowdown,
            jitter=jitter,
            seed=seed,
            max_concurrency=max_concurrency,
            max_model_len=max_model_len,
            natural_length=natural_length,
            no_usage=no_usage,
            reject_ignore_eos=reject_ignore_eos,
            role_chunk=not no_role_chunk,
            fault=Fault(fault) if fault is not None else None,
            fault_every=fault_every,
            fault_match=fault_match,
            perf=_perf(locals()),
        )
    problem = config.perf.startup_problem(max_model_len) if config.perf else None
    if problem:
        raise BenchError(f"the simulated engine does not start: {problem}",
                         hint="change the flag it names (servekit sim serve --help)")  # fmt: skip

    def ready(bound: int) -> None:
        stderr.print(f"servekit simulator listening on http://{host}:{bound} (model {model})")

    try:
        run(serve_forever(config, host, port, ready), LoopKind(loop))
    except (KeyboardInterrupt, asyncio.CancelledError):
        pass
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
