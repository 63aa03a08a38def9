"""``servekit tune``: find a faster engine configuration for a workload, and prove it."""

from __future__ import annotations

import re
from pathlib import Path

import typer

from servekit.errors import TuneError, UsageError


def _budget(text: str) -> float:
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smh]?)\s*", text)
    if match is None:
        raise UsageError(
            f"--budget '{text}' is not a duration", hint="e.g. --budget 30m, 90s or 2h"
        )
    return float(match[1]) * {"": 1, "s": 1, "m": 60, "h": 3600}[match[2]]


def _read(path: Path, kind: str) -> object:
    from servekit.seams import parse_yaml, read_utf8

    def unreadable(problem: object, line: int | None = None, hint: str = "") -> TuneError:
        where = f"line {line}: " if line is not None else ""
        hint = hint or f"see docs/tune.md for the {kind} format"
        return TuneError(f"{path}: cannot read the {kind} file ({where}{problem})", hint=hint)

    text = read_utf8(path, lambda failure: unreadable(failure.exc))
    return parse_yaml(text, unreadable)[0]


def tune(
    engine: str = typer.Option(..., help="vllm, sglang, transformers or servekit-sim (sim)."),
    model: Path = typer.Option(..., "--model", help="The model directory the engine serves."),
    workload: Path = typer.Option(
        ..., help="workload.yaml: the contract every candidate is measured on."
    ),
    space: Path = typer.Option(
        ..., help="space.yaml: search: flag -> values; fixed: load-needed args."
    ),
    budget: str = typer.Option(
        "30m", help="Wall time for everything, engine restarts included (30m, 90s)."
    ),
    out: Path = typer.Option(..., help="New directory for the draft package."),
    gpus: int = typer.Option(1, min=1, help="GPUs the engine uses (throughput per GPU)."),
    hardware: str = typer.Option(
        "1x GPU", metavar="LABEL", help="e.g. '1x H200' (the package's target)."
    ),
    method: str = typer.Option("tpe", help="tpe (optuna), or the baselines random and grid."),
    max_candidates: int | None = typer.Option(
        None, min=1, help="Stop the search after N candidates."
    ),
    confirm_pairs: int = typer.Option(5, min=4, max=10, help="Stock/tuned confirmation pairs."),
    seed: int = typer.Option(0, help="Seed of the search (and of a simulator's host noise)."),
    served_name: str | None = typer.Option(
        None, help="The model name clients send (default: the directory's)."
    ),
    allow_numerics: bool = typer.Option(
        False, "--allow-numerics", help="Search flags that can change outputs."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the outcome as JSON."),
) -> None:
    """Find a faster engine configuration for a workload: search, then confirm against stock in fresh runs; writes a draft package.

    Stock is measured first, then candidates from optuna's TPE (or the random and
    grid baselines), each with its own engine start and one bench run on the
    workload's contract; a candidate that fails to start or serve is kept with its
    reason. The best candidate is never published from its search run: it and
    stock are re-measured in fresh interleaved runs, and a speedup is claimed only
    if those carry it (exact one-sided permutation test at alpha 0.05, and the 2 %
    improvement contract). Then check the draft: servekit package check OUT.

    \b
    workload.yaml:                    space.yaml:
      id: chat-512                      fixed: [--max-model-len, "4096"]
      description: 512 in, 64 out       search:
      prompt_tokens: [512, 512]           --max-num-seqs: [32, 64, 128]
      output_tokens: 64                   --max-num-batched-tokens: [2048, 8192]
      concurrency: 32                     --enable-chunked-prefill: [true, false]
      requests: 128
      warmup: 16
      seed: 1
      context_length: 4096

    \b
    Example:
      servekit tune --engine vllm --model /models/m --workload workload.yaml \\
          --space space.yaml --budget 30m --out tuned/ --hardware "1x H200"

    Flags that can change outputs (dtype, quantization, KV-cache dtype,
    speculative decoding) are refused unless --allow-numerics. docs/tune.md
    explains the loop, the statistics and what the tuner cannot know.
    """
    from servekit.cli.output import print_json, stderr, stdout
    from servekit.progress import track_count
    from servekit.seams import validating, validation_problems
    from servekit.tune.models import TuneConfig
    from servekit.tune.run import tune as run_tune

    name, budget_s = ("servekit-sim" if engine == "sim" else engine), _budget(budget)
    hint = "docs/tune.md shows both file formats"
    with validating(lambda exc: TuneError(validation_problems(exc, {}), hint=hint)):
        config = TuneConfig.model_validate({
            "engine": name, "model_dir": model, "served_name": served_name or model.resolve().name,
            "workload": _read(workload, "workload"), "space": _read(space, "space"),
            "budget_s": budget_s, "max_candidates": max_candidates, "method": method,
            "confirm_pairs": confirm_pairs, "out": out, "gpus": gpus, "hardware": hardware,
            "allow_numerics": allow_numerics, "seed": seed,
        })  # fmt: skip
    total = (max_candidates or config.space.size() + 1) + 2 * confirm_pairs
    with track_count("tune", total, unit="engine runs") as tracker:
        outcome = run_tune(config, tracker, stderr.print if not as_json else None)
    conf = outcome.confirmation
    if as_json:
        print_json({"ok": True, "package": str(outcome.package_dir), "candidates": len(outcome.candidates),
                    "best": outcome.best.model_dump(mode="json") if outcome.best else None,
                    "confirmation": conf.model_dump(mode="json") if conf else None,
                    "seconds": round(outcome.seconds, 1)})  # fmt: skip
        return
    stdout.print(
        f"{len(outcome.candidates)} candidates in {outcome.seconds:.0f} s; best {outcome.best.id if outcome.best else '-'}"
    )
    stdout.print(conf.verdict if conf else "nothing to confirm")
    stdout.print(
        f"draft package: {outcome.package_dir} (next: servekit package check {outcome.package_dir})"
    )
