"""``servekit sim``: run the engine simulator (an OpenAI-compatible streaming server)."""

from __future__ import annotations

import asyncio

import typer

from servekit.cli.choices import FaultName, LoopName
from servekit.errors import UsageError

app = typer.Typer(
    help="The engine simulator: exact, configurable timing for tests and demos. Results "
    "measured against it are labelled simulator results everywhere.",
    no_args_is_help=True,
)


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
) -> None:
    """Serve /v1/completions, /v1/chat/completions, /v1/models, /tokenize, /version and
    /metrics with a known timing model until interrupted (Ctrl-C)."""
    from pydantic import ValidationError

    from servekit.bench.loop import LoopKind, run
    from servekit.bench.sim import Fault, SimConfig, serve_forever
    from servekit.cli.output import stderr
    from servekit.seams import option_names, validation_problems

    try:
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
        )
    except ValidationError as exc:
        names = option_names(SimConfig.model_fields, role_chunk="--no-role-chunk")
        raise UsageError(validation_problems(exc, names)) from exc

    def ready(bound: int) -> None:
        stderr.print(f"servekit simulator listening on http://{host}:{bound} (model {model})")

    try:
        run(serve_forever(config, host, port, ready), LoopKind(loop))
    except (KeyboardInterrupt, asyncio.CancelledError):
        pass
    except OSError as exc:
        raise UsageError(f"cannot listen on {host}:{port}: {exc.strerror}") from exc
