"""``README.md``: what the kit is, what was and was not measured, how to deploy and verify."""

from __future__ import annotations

import re

from servekit.kit.command import HF_TOKEN, TOKEN_SECRET, image
from servekit.package.files import (
    DEPLOY_DIR,
    EVIDENCE_DIR,
    LICENSES_DIR,
    MANIFEST_FILE,
    MODEL_DIR,
    PACKAGE_FILE,
    PIN_FILE,
    README_FILE,
    RECEIPT_FILE,
)
from servekit.package.models import Figure, Package, Provenance
from servekit.package.rules import CheckReport, FigureResult
from servekit.receipts.statement import evidence_files


def _figure_row(fig: Figure, result: FigureResult) -> str:
    value = f"{fig.value:.{fig.decimals}f} {fig.unit}"
    recomputed = f"{result.recomputed:.3f}" if result.recomputed is not None else "-"
    origin = fig.provenance.value + (" (simulator)" if result.simulator else "")
    if fig.status.state.value != "current":
        origin += f", {fig.status.state.value}"
    where = ", ".join(fig.runs) if fig.provenance is Provenance.MEASURED else _source(fig)
    return f"| {fig.label} | {value} | {fig.concurrency} | {origin} | {recomputed} | {where} |"


def _source(fig: Figure) -> str:
    return f"{fig.source.name} ({fig.source.date})" if fig.source else "-"


def _measured(package: Package, report: CheckReport) -> list[str]:
    results = {r.id: r for r in report.figures}
    rows = [_figure_row(f, results[f.id]) for f in package.measurements.figures]
    lines = [
        "## What was measured",
        "",
        f"On {package.hardware.target.label} ({package.hardware.target.interconnect}) with "
        f"{package.engine.name} {package.engine.version}. {_provenance(package)}",
        "",
        "| figure | value | concurrency | provenance | recomputed | runs / source |",
        "| --- | --- | --- | --- | --- | --- |",
        *rows,
    ]
    if package.uses_simulator:
        lines += ["", "**Runs marked simulator measured servekit's simulator, not a real engine.**"]
    return [*lines, "", *_workloads(package)]


def _provenance(package: Package) -> str:
    reported = "*reported* figures come from the named source and could not be recomputed."
    if not evidence_files(package):  # a kit without evidence/ must not point there
        return f"The kit holds no raw evidence: every figure is reported; {reported}"
    return (
        "*Measured* figures were recomputed by servekit from the raw records in `evidence/`; "
        + reported
    )


def _workloads(package: Package) -> list[str]:
    return [
        f"- Workload `{w.id}`: {w.description} Prompts of {w.prompt_tokens.min}-"
        f"{w.prompt_tokens.max} tokens, {w.output_tokens} output tokens, concurrency "
        f"{', '.join(map(str, w.concurrencies))}, {w.measured_requests} measured requests "
        f"after {w.warmup_requests} warmup, seed {w.seed}, context {w.context_length}."
        for w in package.workloads
    ]


def _not_measured(package: Package) -> list[str]:
    lines = ["## What was not measured", ""]
    for d in package.disclosures:
        lines += [f"- **{d.title}.** {d.text}"]
    return lines if package.disclosures else [*lines, "- No disclosure was recorded."]


def _deploy(package: Package) -> list[str]:
    lines = [
        "## Deploy",
        "",
        f"Every deploy file runs the same command, with `{package.model.repo}` pinned to commit "
        f"`{package.model.commit}`; your node downloads the weights from Hugging Face. Image: "
        f"`{image(package)}` (see `deploy/build/BUILD.md`).",
        "",
        "- Docker Compose: `docker compose -f deploy/compose.yaml up`",
        "- Kubernetes: `kubectl apply -f deploy/k8s/`",
        "- A plain host: `sh deploy/launch.sh`",
    ]
    if package.hardware.target.nodes > 1:
        lines += ["", _multinode_note(package)]
    if package.model.gated:
        lines += ["", _gated_note()]
    return lines


def _multinode_note(package: Package) -> str:
    return (
        f"This package spans {package.hardware.target.nodes} nodes. Kubernetes runs a "
        "LeaderWorkerSet (install LWS first); with Compose or launch.sh, start the leader "
        "(`launch.sh leader`), then each worker (`launch.sh worker LEADER_ADDRESS`)."
    )


def _gated_note() -> str:
    return (
        f"The model is gated: set `{HF_TOKEN}` to a token that may read it (Kubernetes: "
        f"`kubectl create secret generic {TOKEN_SECRET} --from-literal=token=...`)."
    )


def _verify(package: Package, key_id: str) -> list[str]:
    pin = f" (it reads `{PIN_FILE}`)" if package.model.files else ""
    return [
        "## Verify and unpack",
        "",
        "```sh",
        f"servekit kit unpack KIT.tar.gz --trust trust.toml --expect {package.id}@{package.version} kit/",
        "```",
        "",
        "verifies the kit (the archive byte for byte, every file against `MANIFEST`, the "
        f"signature of `receipt.dsse.json` by publisher key id `{key_id}`, the receipt's "
        "subjects, the figures recomputed from the evidence) and only then writes the verified "
        "files into `kit/`. Do not unpack a kit with `tar -x`: tar writes what the archive "
        "says, not what was verified. After the download, check the weights: "
        f"`servekit verify weights DIR --kit KIT.tar.gz --trust trust.toml`{pin}.",
        "",
        "`trust.toml` is the trust file of whoever gave you the kit: a store's "
        "(`servekit trust fetch STORE_URL -o trust.toml` writes its `/keys/trust.toml` and "
        "prints the key id), or the publisher's public key file, named in place of "
        "`trust.toml`. Compare the key id with one you got another way before you trust it.",
    ]


def _evidence_count(package: Package) -> str:
    count = len(evidence_files(package))
    return f"{count} raw evidence file{'' if count == 1 else 's'}" if count else "no raw evidence"


def render_readme(package: Package, report: CheckReport, key_id: str) -> bytes:
    target, model = package.hardware.target, package.model
    lines = [
        f"# {package.name}",
        "",
        f"Kit for package `{package.id}` version {package.version} by {package.publisher}. "
        f"Status: {package.status.value}"
        + (f", published {package.published}." if package.published else "."),
        "",
        package.summary,
        "",
        f"It holds the serve configuration for `{model.repo}` on {target.label} "
        f"({target.nodes} node{'s' if target.nodes > 1 else ''}), {_evidence_count(package)}, "
        "the licences and a signed receipt. It holds no weight byte.",
        "",
        *_measured(package, report),
        "",
        *_not_measured(package),
        "",
        *_deploy(package),
        "",
        *_verify(package, key_id),
    ]
    return ("\n".join(lines) + "\n").encode("utf-8")


_TOP = "|".join(re.escape(d) for d in (DEPLOY_DIR, EVIDENCE_DIR, LICENSES_DIR, MODEL_DIR))
_FILES = "|".join(re.escape(f) for f in (PACKAGE_FILE, MANIFEST_FILE, README_FILE, RECEIPT_FILE))
# A kit path: one of the kit's folders followed by a path, or one of its top-level files,
# not inside a longer name or an absolute path (``/models/x`` names the node, not the kit).
# Case-insensitive, so ``Model/pin.json`` is caught and then found missing.
_KIT_PATH = re.compile(
    rf"(?<![\w/.-])(?:(?:{_TOP})/[\w./-]*|(?:{_FILES}))(?![\w/-])", re.IGNORECASE
)


def named_paths(readme: str) -> list[str]:
    """Every kit path ``readme`` names (``deploy/compose.yaml``, ``deploy/k8s/``,
    ``model/pin.json``...), in order, without trailing sentence punctuation."""
    found = (m.group(0).rstrip(".") for m in _KIT_PATH.finditer(readme))
    return list(dict.fromkeys(found))


def missing_paths(readme: str, kit_paths: set[str]) -> list[str]:
    """The paths ``readme`` names that are neither a file of the kit nor a folder of one."""
    folders = {
        path.rsplit("/", i)[0] + "/" for path in kit_paths for i in range(1, path.count("/") + 1)
    }
    return [
        p for p in named_paths(readme) if p not in kit_paths and p.rstrip("/") + "/" not in folders
    ]
