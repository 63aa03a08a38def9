"""The tuner's output: a draft package that ``package check`` reads and ``kit build`` builds.

Layout (inside ``--out``)::

    package.yaml               the draft: stock and tuned configurations, figures, disclosures
    evidence/search/cNNN.jsonl one selection run per measured candidate (c000 is stock)
    evidence/confirm/*.jsonl   the confirmation runs, stock-i and tuned-i interleaved
    evidence/search-log.json   every candidate: flags, status, reason, score, seconds
    evidence/confirmation.json the confirmation's scores, test and verdict
    model/pin.json             the model directory's digest (servekit model digest)
    licenses/                  the package licence and the model licence (placeholders)

Figures rest only on confirmation runs; selection runs are listed as runs (the search is
evidence) but no figure names them, and SK140 refuses one that does. The speedup, when
the confirmation clears the test, compares the pair of confirmation runs with the
smallest improvement, so the headline never exceeds what the runs carry on average.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import yaml

from servekit.engines import EngineSpec, engine
from servekit.errors import GpuNameError
from servekit.fit.gpus import lookup
from servekit.package.evidence import load_evidence
from servekit.package.files import LICENSES_DIR, PACKAGE_FILE, PIN_FILE
from servekit.package.models import Metric, Statistic
from servekit.package.stats import figure_value, summarize
from servekit.tune.models import CONTRACT_PCT, Candidate, Confirmation, TuneConfig
from servekit.weights.pin import pin_directory
from servekit.weights.pinfile import write_pin

SOURCE_REPOS = {"vllm": "vllm-project/vllm", "sglang": "sgl-project/sglang",
                "transformers": "huggingface/transformers", "servekit-sim": "servekit/servekit"}  # fmt: skip
DISTRIBUTIONS = {
    "vllm": "vllm",
    "sglang": "sglang",
    "transformers": "transformers",
    "servekit-sim": "servekit",
}
TOLERANCE_PCT = 10.0
"""Confirmation replicates are separate engine starts: their start-to-start spread is what
the permutation test weighs, so the replicate tolerance is the rules' largest (SK104)."""
_PACKAGE_LICENSE = """# Draft licence

Written by `servekit tune` as a placeholder: replace it with the licence this package is
offered under before publishing.
"""
_MODEL_LICENSE = """# Model licence: not determined

`servekit tune` served a local model directory and cannot know its licence. Put the
model's licence text here before publishing.
"""


class _Plain(yaml.SafeDumper):
    """Values written out in full: the package loader refuses YAML anchors and aliases."""

    def ignore_aliases(self, data: object) -> bool:
        return True


def _hardware(label: str, gpus: int) -> tuple[dict[str, Any], str]:
    match = re.fullmatch(r"\s*(\d+)\s*x\s*(.+?)\s*", label)
    count, gpu = (int(match[1]), match[2]) if match else (gpus, label.strip())
    try:
        memory = lookup(gpu).total_gb
    except GpuNameError:
        memory = 1.0
    target = {
        "gpu": gpu,
        "count": count,
        "memory_per_gpu_gb": memory,
        "interconnect": "single node",
    }
    return target, f"{count}x {gpu}"


def _value(root: Path, run_file: str, config: TuneConfig, metric: Metric, stat: Statistic) -> float:
    ev = load_evidence(root / run_file)
    summary = summarize(ev.measured(config.workload.concurrency), config.workload.concurrency)
    return figure_value(summary, metric, stat, None, ev.header.gpus)


def _figure(fid: str, label: str, runs: list[str], value: float, engine_version: str, hw: str,
            config: TuneConfig) -> dict[str, Any]:  # fmt: skip
    o = config.workload.objective
    return {
        "id": fid, "label": label, "metric": o.metric.value, "statistic": o.statistic.value,
        "concurrency": config.workload.concurrency, "value": round(value, 2), "decimals": 2,
        **({"scope": "node"} if o.metric.is_throughput else {}),
        "provenance": "measured", "runs": runs, "on_card": True,
        "measured_on": {"engine": engine_version, "hardware": hw, "workload": config.workload.id},
    }  # fmt: skip


def _primary(runs: list[tuple[str, str, float]], higher: bool) -> int:
    """The confirmation pair with the smallest improvement (its index, 1-based)."""
    stock = {f.split("-")[-1]: s for f, side, s in runs if side == "stock"}
    tuned = {f.split("-")[-1]: s for f, side, s in runs if side == "tuned"}
    pairs = {
        k: (tuned[k] / stock[k] if higher else stock[k] / tuned[k]) for k in stock if k in tuned
    }
    key = min(pairs, key=lambda k: pairs[k]) if pairs else "1.jsonl"
    return int(key.removesuffix(".jsonl"))


def _runs(config: TuneConfig, candidates: tuple[Candidate, ...], confirm: list[tuple[str, str, float]],
          simulator: bool, unshipped: dict[str, str] | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """Every run; the confirmation runs of a side in ``unshipped`` (side -> why) retracted."""
    today = dt.date.today().isoformat()
    base = {"workload": config.workload.id, "simulator": simulator, "date": today}
    selection = {"state": "retracted", "date": today,
                 "reason": "a selection run of servekit tune: it chose a candidate, and no figure may rest on it (SK140)"}  # fmt: skip
    out = [{"id": f"search-{c.id}", "file": c.run_file, "config": "stock" if c.id == "c000" else c.id,
            "status": selection, **base} for c in candidates if c.run_file]  # fmt: skip
    for file, side, _ in confirm:
        number = file.rsplit("-", 1)[-1].removesuffix(".jsonl")
        why = (unshipped or {}).get(side)
        status = {"status": {"state": "retracted", "date": today, "reason": why}} if why else {}
        out.append(
            {"id": f"confirm-{side}-{number}", "file": file, "config": side, **base, **status}
        )
    return out


def _config_runs(confirm: list[tuple[str, str, float]], side: str, primary: int) -> list[str]:
    ids = [
        f"confirm-{side}-{f.rsplit('-', 1)[-1].removesuffix('.jsonl')}"
        for f, s, _ in confirm
        if s == side
    ]
    first = f"confirm-{side}-{primary}"
    return [first, *(i for i in ids if i != first)] if first in ids else ids


def _measurements(config: TuneConfig, candidates: tuple[Candidate, ...], conf: Confirmation | None,
                  confirm: list[tuple[str, str, float]], version: str, hw: str, simulator: bool) -> dict[str, Any]:  # fmt: skip
    """Figures of the shipped configuration (tuned when the confirmation carried it, else
    stock); both configurations' when a speedup over stock is published. The confirmation runs
    of a configuration with no figure stay as evidence, retracted with the reason (SK135)."""
    o, root = config.workload.objective, config.out
    m: dict[str, Any] = {"tolerance_pct": TOLERANCE_PCT, "improvement_contract_pct": CONTRACT_PCT,
                         "runs": _runs(config, candidates, confirm, simulator), "figures": [], "speedups": []}  # fmt: skip
    if conf is None:
        return m
    primary = _primary(confirm, o.metric.is_throughput)
    label = f"{o.metric.value} {o.statistic.value} at concurrency {config.workload.concurrency}"
    base = f"stock + {' '.join(config.space.shared)}" if config.space.shared else "stock"
    titles = {"stock": base, "tuned": f"tuned ({conf.candidate})"}
    values, runs = {}, {}
    for side in titles:
        runs[side] = _config_runs(confirm, side, primary)
        if not runs[side]:
            continue
        file = next(
            f
            for f, s, _ in confirm
            if s == side and f.endswith(f"-{runs[side][0].rsplit('-', 1)[-1]}.jsonl")
        )
        values[side] = round(_value(root, file, config, o.metric, o.statistic), 2)
    speedup, why_not = None, "the confirmation did not show it faster than the baseline"
    if conf.claimed and {"stock", "tuned"} <= set(values):
        s, t = values["stock"], values["tuned"]
        gain = (t / s - 1) if o.metric.is_throughput else (s / t - 1)
        if config.space.shared:
            why_not = (f"it ran {' '.join(config.space.shared)}, so it is not the engine's stock and the "
                       "rules publish no speedup over it (SK106, SK131); the confirmation's result is "
                       "in the speedup disclosure")  # fmt: skip
        elif gain * 100 < CONTRACT_PCT:  # the most cautious pair does not clear the contract
            why_not = "its most cautious confirmation pair does not clear the improvement contract"
        else:
            speedup = {"id": "tuned-vs-stock", "figure": f"tuned-{o.metric.value}",
                       "baseline": f"stock-{o.metric.value}", "value_pct": round(gain * 100, 2),
                       "baseline_is_stock": True}  # fmt: skip
    shipped = "tuned" if conf.claimed else "stock"
    published = set(titles) if speedup else {shipped}
    unshipped = {side: (f"the {side} configuration is not shipped and publishes no figure: "
                        + ("the confirmation did not show it faster than the baseline" if side == "tuned" else
                           f"no speedup over it is published ({why_not})")
                        + "; the run stays as evidence of the confirmation")
                 for side in titles if side not in published}  # fmt: skip
    m["runs"] = _runs(config, candidates, confirm, simulator, unshipped)
    for side, title in titles.items():
        if side in values and side in published:
            m["figures"].append(_figure(f"{side}-{o.metric.value}", f"{label}, {title}", runs[side],
                                        values[side], version, hw, config))  # fmt: skip
    if speedup:
        m["speedups"].append(speedup)
    return m


def _disclosures(config: TuneConfig, candidates: tuple[Candidate, ...], conf: Confirmation | None,
                 seconds: float, simulator: bool, stopped: bool = False,
                 search_stopped: str = "") -> list[dict[str, str]]:  # fmt: skip
    why = f" The search stopped: {search_stopped}." if search_stopped else ""
    spec = engine(config.engine)
    failed = [c for c in candidates if c.score is None]
    searched = ", ".join(f"{k} in {list(v)}" for k, v in config.space.search.items())
    others = [f.name for f in spec.flags if f.name not in config.space.search]
    out = [
        {"topic": "other", "subject": "tuning", "title": "What the tuner searched, and what it did not",
         "text": f"servekit tune ({config.method.value}) searched {searched} on {config.engine}, "
                 f"{len(candidates)} candidates measured once each, stock first ({len(failed)} failed to "
                 f"start or to serve; their reasons are in the package's search log, search-log.json beside its evidence), in {seconds:.0f} s of a "
                 f"{config.budget_s:g} s budget, engine restarts included. Not searched: "
                 f"{', '.join(others) or 'nothing else in servekit schema'}, and every flag outside it. "
                 "The search runs chose a candidate and are kept as evidence; no figure rests on them." + why},
        {"topic": "speedup", "title": "Confirmation runs, not the search, decide the speedup",
         "text": (f"Stock and {conf.candidate} were re-measured in {len(conf.stock_scores)} + "
                  f"{len(conf.tuned_scores)} fresh runs, interleaved, the engine restarted for each. "
                  f"{conf.verdict}. " + (("The tuned configuration is shipped; no speedup is published, because the baseline is "
                   "not the engine's stock (below)." if config.space.shared else "A speedup is claimed.")
                  if conf.claimed else
                  "No speedup is claimed: the tuned configuration is not shown to beat stock."))
         if conf else "No candidate besides stock was measured" + (f" ({search_stopped})" if search_stopped else "")
         + ", so nothing was confirmed."},
        {"topic": "weights_source", "title": "The model is a local directory",
         "text": f"The engine served {config.model_dir}; model.commit is the first 40 hex of its tree digest "
                 "(model/pin.json), not a Hugging Face commit. Pin the upstream model before publishing."},
        {"topic": "context", "title": "One prompt length range was exercised",
         "text": f"Prompts of {config.workload.prompt_tokens[0]} to {config.workload.prompt_tokens[1]} tokens and "
                 f"{config.workload.output_tokens} output tokens; nothing longer, up to the "
                 f"{config.workload.context_length}-token context, was measured."},
        {"topic": "engine_build", "title": "The engine build was not recorded",
         "text": "The engine is the installed distribution the tuner ran; its RECORD hash was not taken."},
    ]  # fmt: skip
    if stopped:
        out.append({"topic": "other", "subject": "tuning", "title": "The session was stopped before its end",
                    "text": f"servekit tune got SIGTERM after {seconds:.0f} s: the package holds the "
                            f"{len(candidates)} candidates and {len(conf.stock_scores) + len(conf.tuned_scores) if conf else 0} confirmation "
                            "runs measured by then, and nothing after."})  # fmt: skip
    if config.space.shared:
        out.append({"topic": "speedup", "title": "The baseline is not the engine's stock",
                    "text": f"Every candidate, the baseline included, ran with {' '.join(config.space.shared)} "
                            f"(space.yaml shared:), which is not among {spec.name}'s load-needed flags: the "
                            "baseline is stock plus these, and any speedup is against it, not against "
                            f"{spec.name}'s defaults (baseline_is_stock: false)."})  # fmt: skip
    if config.space.env:
        out.append({"topic": "other", "subject": "environment", "title": "The environment every start ran with",
                    "text": "Every engine start, the baseline included, ran with "
                            + ", ".join(f"{k}={v}" for k, v in config.space.env.items())
                            + " (space.yaml env:, recorded in each run's header)."})  # fmt: skip
    if simulator:
        out.append({"topic": "simulator", "title": "Every figure was measured against servekit's simulator",
                    "text": "The engine was `servekit sim serve` with its performance model: the figures "
                            "say nothing about any model or GPU."})  # fmt: skip
    if config.allow_numerics:
        out.append({"topic": "accuracy", "title": "Numerics-changing flags were searched",
                    "text": "--allow-numerics: the tuned configuration may change outputs; an accuracy "
                            "check against stock must be measured before any claim is published."})  # fmt: skip
    return out


def _accuracy(config: TuneConfig, simulator: bool) -> dict[str, Any]:
    if simulator:
        return {"method": "not_applicable", "claim": "None; the simulator generates placeholder words.",
                "methodology": "No accuracy is measured or claimed for a simulator.",
                "weights_modified": False, "absent_reason": "The simulator runs no model.", "gate": "not_run"}  # fmt: skip
    if config.allow_numerics:
        return {"method": "not_measured", "claim": "Not yet checked: numerics-changing flags were searched.",
                "methodology": "Measure the tuned configuration's accuracy against stock before publishing.",
                "weights_modified": False, "absent_reason": "servekit tune does not measure accuracy.",
                "runtime_stages_applied": list(config.space.search), "gate": "not_run"}  # fmt: skip
    return {"method": "by_construction", "claim": "Served outputs match stock: no searched flag changes numerics.",
            "methodology": "Only flags the engine's schema marks as not changing outputs were searched.",
            "weights_modified": False, "gate": "not_run"}  # fmt: skip


def _model(config: TuneConfig) -> dict[str, Any]:
    pin = pin_directory(config.model_dir)
    (config.out / PIN_FILE).parent.mkdir(parents=True, exist_ok=True)
    write_pin(pin, config.out / PIN_FILE)
    name = re.sub(r"[^A-Za-z0-9._-]", "-", config.model_dir.resolve().name) or "model"
    return {"repo": f"local/{name}", "commit": pin.tree_digest.removeprefix("sha256:")[:40],
            "tree_digest": pin.tree_digest, "total_bytes": pin.total_bytes,
            "shard_count": max(1, pin.shard_count), "files": PIN_FILE,
            "parameters": {"total": 1, "notes": "Not counted by servekit tune: fill in before publishing."},
            "modalities": [{"modality": "text"}], "context_length": config.workload.context_length,
            "license": {"name": "Not determined", "file": f"{LICENSES_DIR}/MODEL_LICENSE.md",
                        "modifications": "None; the tuner changes serve flags only."}}  # fmt: skip


def _engine(spec: EngineSpec, version: str) -> dict[str, Any]:
    return {"name": spec.name, "version": version, "source_repo": SOURCE_REPOS.get(spec.name, spec.name),
            "build": "wheel", "distribution": f"{DISTRIBUTIONS.get(spec.name, spec.name)}=={version.split()[-1]}",
            "notes": "The distribution installed where servekit tune ran.",
            **({"image": spec.release_image.format(version=version.split()[-1])} if spec.release_image else {})}  # fmt: skip


def _serve(config: TuneConfig, spec: EngineSpec, flags: dict[str, Any]) -> dict[str, Any]:
    args = [*config.space.fixed, *config.space.shared, *spec.flag_args(flags)]
    serve: dict[str, Any] = {"entrypoint": list(spec.entrypoint), "args": args,
                             "served_model_name": config.served_name}  # fmt: skip
    if config.space.env:
        serve["env"] = [{"name": k, "value": v} for k, v in config.space.env.items()]
    if spec.model_arg:
        serve["model_arg"] = spec.model_arg
    if spec.served_name_flag is None:  # clients send the model path (kits add no flag for it)
        serve["served_model_name"] = str(config.model_dir)
    if str(config.model_dir.resolve()).startswith("/"):
        serve["model_dir"] = str(config.model_dir.resolve())
    return serve


def _version(config: TuneConfig, candidates: tuple[Candidate, ...]) -> tuple[str, bool]:
    """The engine version and simulator flag the first measured run's header recorded."""
    first = next((c.run_file for c in candidates if c.run_file), None)
    if first is None:
        return "unknown", False
    header = load_evidence(config.out / first).header
    return header.engine_version or "unknown", header.simulator


def write_search_log(config: TuneConfig, session: str, candidates: tuple[Candidate, ...]) -> None:
    """``evidence/search-log.json``, rewritten after every candidate, so a session stopped
    from outside keeps the record of what it measured."""
    evidence = config.out / "evidence"
    evidence.mkdir(parents=True, exist_ok=True)
    log = {"session": session, "engine": config.engine, "method": config.method.value,
           "budget_s": config.budget_s, "space": config.space.model_dump(mode="json"),
           "objective": config.workload.objective.model_dump(mode="json"),
           "candidates": [c.model_dump(mode="json") for c in candidates]}  # fmt: skip
    (evidence / "search-log.json").write_text(json.dumps(log, indent=2) + "\n")


def _logs(config: TuneConfig, session: str, candidates: tuple[Candidate, ...], conf: Confirmation | None,
          confirm: list[tuple[str, str, float]]) -> None:  # fmt: skip
    evidence = config.out / "evidence"
    write_search_log(config, session, candidates)
    if conf is not None:
        record = {
            **conf.model_dump(mode="json"),
            "runs": [{"file": f, "side": s, "score": v} for f, s, v in confirm],
        }
        (evidence / "confirmation.json").write_text(json.dumps(record, indent=2) + "\n")


def write_draft(config: TuneConfig, session: str, candidates: tuple[Candidate, ...],
                conf: Confirmation | None, confirm: list[tuple[str, str, float]], seconds: float,
                *, stopped: bool = False, search_stopped: str = "") -> Path:  # fmt: skip
    """Write the package draft into ``config.out`` (see the module docstring)."""
    spec, out = engine(config.engine), config.out
    (out / "evidence").mkdir(parents=True, exist_ok=True)
    (out / "licenses").mkdir(exist_ok=True)
    (out / "licenses" / "PACKAGE_LICENSE.md").write_text(_PACKAGE_LICENSE)
    (out / "licenses" / "MODEL_LICENSE.md").write_text(_MODEL_LICENSE)
    _logs(config, session, candidates, conf, confirm)
    version, simulator = _version(config, candidates)
    target, hw = _hardware(config.hardware, config.gpus)
    tuned = next((c.flags for c in candidates if conf and c.id == conf.candidate), {})
    w = config.workload
    package = {
        "schema_version": 1, "id": re.sub(r"[^a-z0-9._-]", "-", f"tuned-{spec.name}-{w.id}".lower()),
        "name": f"{spec.name} tuned for {w.id} (servekit tune draft)", "version": "0.1.0", "status": "draft",
        "publisher": "servekit tune (draft: set the publisher)",
        "summary": (conf.verdict if conf else "No candidate was confirmed."),
        "model": _model(config), "engine": _engine(spec, version),
        "serve": _serve(config, spec, tuned if conf and conf.claimed else {}),
        "hardware": {"target": target},
        "workloads": [{"id": w.id, "description": w.description, "dataset": f"synthetic (servekit bench run, seed {w.seed})",
                       "api": w.api.value, "prompt_tokens": {"min": w.prompt_tokens[0], "max": w.prompt_tokens[1]},
                       "output_tokens": w.output_tokens, "concurrencies": [w.concurrency],
                       "warmup_requests": w.warmup, "measured_requests": w.requests, "seed": w.seed,
                       "context_length": w.context_length}],
        "measurements": _measurements(config, candidates, conf, confirm, version, hw, simulator),
        "accuracy": _accuracy(config, simulator),
        "disclosures": _disclosures(config, candidates, conf, seconds, simulator, stopped, search_stopped),
        "peak_memory": {"published": False, "note": "servekit tune does not measure memory."},
        "cost": {"as_of": dt.date.today().isoformat(), "note": "No cost is published by servekit tune."},
        "license": {"id": "draft-license", "name": "Draft licence", "version": "0.1", "date": dt.date.today().isoformat(),
                    "file": f"{LICENSES_DIR}/PACKAGE_LICENSE.md"},
        "pricing": {"usd": 0, "tier": "standard", "maintenance": {"available": False}},
    }  # fmt: skip
    (out / PACKAGE_FILE).write_text(
        "# Written by servekit tune: a draft. Figures rest on confirmation runs only (docs/tune.md).\n"
        + yaml.dump(package, Dumper=_Plain, sort_keys=False, allow_unicode=True)
    )
    return out / PACKAGE_FILE
