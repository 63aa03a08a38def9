"""``servekit package``: check a package's claims against its evidence; print its schema."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer
from rich.table import Table

from servekit.cli.output import fail, plain, print_json, stacked, stdout
from servekit.errors import ClaimRuleError

if TYPE_CHECKING:  # the library loads when a command runs, not to parse its arguments
    from servekit.fit import PackageFit
    from servekit.package import CheckReport
    from servekit.package.rules.report import FigureResult

app = typer.Typer(
    help="Work with a package definition: check its claims, print its schema.",
    no_args_is_help=True,
)


def _rate(rate: float | None) -> str:
    return "-" if rate is None else f"{rate * 100:.1f} %"


def _workload_text(f: FigureResult) -> str:
    w = f.workload
    if not w:
        return "-"
    tokens = w["prompt_tokens"]
    low, high = tokens if isinstance(tokens, list) else (tokens, tokens)
    prompt = f"{low}" if low == high else f"{low}-{high}"
    return (
        f"{w['api']}, prompt {prompt} tok, output {w['output_tokens']} tok, "
        f"{w['requests']} req + {w['warmup']} warmup"
    )


def _provenance(f: FigureResult) -> str:
    provenance = f.provenance.value + (" (simulator)" if f.simulator else "")
    if f.status != "current":
        provenance += f" [{f.status}]"
    provenance = plain(provenance)
    if f.refused_by:
        provenance = f"[red]REFUSED ({', '.join(f.refused_by)})[/] " + provenance
    return provenance


def _runs_text(f: FigureResult) -> str:
    if f.provenance.value != "measured":
        return f.source or "-"
    runs = ", ".join(f"{run} {value:.{f.decimals + 1}f}" for run, value in f.per_run.items())
    spread = f.spread_pct
    return runs + (f" (spread {spread:.1f} %)" if spread is not None else "")


def _figure_name(f: FigureResult) -> str:
    scope = f" {f.scope}" if f.scope else ""
    return f"{f.metric} {f.statistic}{scope} @ c={f.concurrency}"


def render_report(report: CheckReport) -> None:
    if stacked():
        _render_stacked(report)
    else:
        _render_table(report)
    _render_verdict(report)


def _render_stacked(report: CheckReport) -> None:
    stdout.print(f"[italic]{plain(report.package_id)} {plain(report.version)}: figures[/]")
    for f in report.figures:
        load = min(f.achieved_concurrency.values()) if f.achieved_concurrency else None
        recomputed = f"{f.recomputed:.3f}" if f.recomputed is not None else "-"
        stdout.print(f"[bold]{plain(f.label)}[/]: {plain(f.display)}  {_provenance(f)}")
        stdout.print(f"  {plain(_figure_name(f))}, recomputed {recomputed}")
        stdout.print(
            f"  load {'-' if load is None else f'{load:.2f}'}, errors {_rate(f.error_rate)}"
        )
        stdout.print(f"  workload: {plain(_workload_text(f))}")
        stdout.print(f"  runs: {plain(_runs_text(f))}")


def _render_table(report: CheckReport) -> None:
    table = Table(title=f"{report.package_id} {report.version}: figures", title_justify="left")
    columns = ("figure", "metric @ concurrency", "value", "provenance", "recomputed", "load",
               "errors", "workload", "runs / source")  # fmt: skip
    for column in columns:
        table.add_column(column)
    for f in report.figures:
        recomputed = f"{f.recomputed:.3f}" if f.recomputed is not None else "-"
        load = min(f.achieved_concurrency.values()) if f.achieved_concurrency else None
        row = [plain(f.label), plain(_figure_name(f)), f.display, _provenance(f), recomputed]
        row += ["-" if load is None else f"{load:.2f}", _rate(f.error_rate)]
        row += [plain(_workload_text(f)), plain(_runs_text(f))]
        table.add_row(*row)
    stdout.print(table)


def _render_verdict(report: CheckReport) -> None:
    """After the figures, in either layout: what cannot be verified, the counts, and
    each refused claim with its fix."""
    stdout.print("load: lowest achieved concurrency over the figure's runs; errors: failed share")
    _render_cannot_verify(report)
    from servekit.package.rules import RULES

    measured = sum(1 for f in report.figures if f.provenance.value == "measured")
    stdout.print(
        f"{measured} measured (recomputed from raw records), "
        f"{len(report.figures) - measured} reported (shown as reported, never as measured)"
    )
    for v in report.violations:
        stdout.print(
            f"[red]✗ {v.rule} {RULES[v.rule].name}[/] {plain(v.field)}: {plain(v.message)}"
        )
        stdout.print(f"    fix: {plain(v.fix)}")
    if report.ok:
        stdout.print("[green]✓ every claim is carried by the evidence[/]")


def render_fit(fit: PackageFit | None, *, placeholder: bool = False) -> None:
    """The predicted floor for the package's own target, beside its measured one."""
    from servekit.fit.models import GIB

    if fit is None:
        where = (
            "its model commit is a placeholder, so there is nothing on the Hub to size either; "
            "`servekit fit --package DIR MODEL_DIR` sizes a local copy or its config.json"
            if placeholder
            else "`servekit fit --package DIR` predicts from the pinned commit's headers"
        )
        stdout.print(
            f"memory floor: no prediction (the package carries no model/config.json; {where})"
        )
        return
    r = fit.result
    measured = f"{fit.floor_gib:.2f} GiB" if fit.floor_gib is not None else "not measured"
    verdict = "fits" if r.fits else "does not fit"
    stdout.print(
        f"memory floor, weights per GPU: measured {measured}, predicted "
        f"{r.weights_bytes_per_gpu / GIB:.2f} GiB ({r.basis.value} basis, stated error "
        f"{fit.stated_error * 100:.0f} %); predicted on the target {r.gpu.name}: {verdict}, "
        f"margin {r.margin_bytes / GIB:+.2f} GiB"
    )
    if fit.contradiction:
        stdout.print(f"[red]✗ floor contradicted:[/] {plain(fit.contradiction)}")


def _render_cannot_verify(report: CheckReport) -> None:
    """What the evidence cannot show (v1 files, or v2 fields not given), once per set of
    runs that lack the same."""
    grouped: dict[tuple[str, ...], list[str]] = {}
    for run_id, missing in (report.cannot_verify or {}).items():
        grouped.setdefault(missing, []).append(run_id)
    for missing, run_ids in grouped.items():
        stdout.print(
            f"[yellow]cannot verify in {plain(', '.join(run_ids))} (not in the evidence):[/]"
        )
        for item in missing:
            stdout.print(f"  - {plain(item)}")


@app.command("check")
def check_command(
    directory: Path = typer.Argument(..., help="Package directory (holds package.yaml)."),
    as_json: bool = typer.Option(False, "--json", help="Print the report as JSON."),
) -> None:
    """Recompute every figure from the raw evidence and refuse claims it does not carry.

    Exit status: 0 when every claim holds, 4 when a claim rule refuses a figure
    (each violation names the rule id, the field and the fix), 3 when the package
    cannot be loaded. docs/rules.md explains each rule. Also prints the predicted
    memory floor beside the measured one, flagging a floor the prediction contradicts
    (docs/fit.md).
    """
    from servekit.fit import package_fit
    from servekit.package import check, load_package

    loaded = load_package(directory)
    report = check(loaded)
    fit = package_fit(loaded)
    result = {**report.as_dict(), "fit": fit.as_dict() if fit else None}
    if not as_json:
        render_report(report)
        render_fit(fit, placeholder=loaded.package.model.placeholder_commit)
    if not report.ok:
        raise fail(ClaimRuleError(report.violations), result, as_json=as_json)
    if as_json:
        print_json({"ok": True, **result})


@app.command("schema")
def schema_command() -> None:
    """Print the JSON Schema of package.yaml (the same as schema/package.schema.json)."""
    from servekit.package.schema import package_json_schema_text

    typer.echo(package_json_schema_text(), nl=False)


@app.command("rules")
def rules_command(
    as_json: bool = typer.Option(False, "--json", help="Print the rules as JSON."),
) -> None:
    """List every claim rule with its id and what it requires."""
    from servekit.package.rules import RULES

    rules = sorted(RULES.values(), key=lambda r: r.id)
    if as_json:
        keys = ("id", "name", "family", "statement", "seed_refusal")
        print_json([{k: getattr(r, k) for k in keys} for r in rules])
        return
    for r in rules:
        stdout.print(f"[bold]{r.id}[/] {r.name} ({r.family}): {plain(r.statement)}")
