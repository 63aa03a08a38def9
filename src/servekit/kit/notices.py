"""Rendered notices: the model licence notice and the build recipe's notes.

``licenses/MODEL_NOTICE.md`` gives the base model's attribution, licence, key
obligations and the publisher's statement of modifications; ``deploy/build/BUILD.md``
says which engine source the recipe builds, with its exclusions.
"""

from __future__ import annotations

from servekit.kit.command import image
from servekit.package.files import (
    BUILD_NOTES_FILE,
    MODEL_NOTICE_FILE,
    license_kit_path,
    recipe_kit_path,
)
from servekit.package.models import EngineBuild, Package

MODEL_NOTICE = MODEL_NOTICE_FILE
BUILD_NOTES = BUILD_NOTES_FILE


def _obligations(package: Package) -> list[str]:
    items = package.model.license.obligations
    if not items:
        return ["No key obligations were recorded; read the licence text itself."]
    return [
        f"- {f'Section {o.section}: ' if o.section else ''}{o.summary}"
        + (f" (applies: {o.threshold})" if o.threshold else "")
        for o in items
    ]


def render_model_notice(package: Package) -> bytes:
    model, lic = package.model, package.model.license
    lines = [
        f"# {model.repo}: attribution and licence",
        "",
        f"This kit deploys {model.repo} at commit {model.commit}, fetched from Hugging Face",
        "by your node. The kit holds no weight byte.",
        "",
        f"- Licence: {lic.name}{f' ({lic.spdx})' if lic.spdx else ''}, full text in "
        f"{license_kit_path(lic.file)}",
        f"- Copyright: {lic.copyright or 'as stated in the licence text'}",
        f"- Commercial use: {_yes_no(lic.commercial_use)}",
        "",
        "## Statement of modifications",
        "",
        lic.modifications,
        "",
        "## Key obligations",
        "",
        *_obligations(package),
    ]
    return ("\n".join(lines) + "\n").encode("utf-8")


def _yes_no(value: bool | None) -> str:
    return "not stated" if value is None else ("permitted" if value else "not permitted")


def _build_steps(package: Package) -> list[str]:
    engine = package.engine
    if engine.build_recipe is None:
        wheel = engine.distribution or f"{engine.name}=={engine.version}"
        return [f"The engine is a released wheel: `pip install '{wheel}'`."]
    recipe = recipe_kit_path(engine.build_recipe)
    return [
        f"Build the image the deploy files run from `{recipe}`:",
        "",
        "```sh",
        f"docker build -f {recipe} -t {image(package)} deploy/build",
        "```",
    ]


def _distribution(package: Package) -> list[str]:
    engine = package.engine
    if engine.distribution is None:
        return []
    record = engine.distribution_record_sha256
    return [
        f"- Distribution: {engine.distribution}" + (f" (RECORD sha256 {record})" if record else "")
    ]


def render_build_notes(package: Package) -> bytes:
    engine = package.engine
    exclusions = [f"- {e}" for e in engine.build_exclusions] or ["- none"]
    executed = "yes" if engine.recipe_executed else "no: treat your first build as a validation run"
    lines = [
        f"# Engine build: {engine.name} {engine.version}",
        "",
        f"- Source: {engine.source_repo} at commit {engine.source_commit or '(not recorded)'}",
        *_distribution(package),
        f"- Build: {'from source' if engine.build is EngineBuild.SOURCE else 'released wheel'}",
        f"- A binary ships in this kit: {'yes' if engine.binary_ships else 'no'}",
        f"- The recipe was executed end to end before publication: {executed}",
        "",
        "Excluded from the build:",
        "",
        *exclusions,
        "",
        *_build_steps(package),
    ]
    if engine.notes:
        lines += ["", engine.notes]
    return ("\n".join(lines) + "\n").encode("utf-8")
