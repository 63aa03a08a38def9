"""Build a kit from a package directory.

Steps:
  1. load the package and run every claim rule; refuse on any violation, and a
     ``published`` date after the signing time;
  2. load the signing key (refused when group or others can read it);
  3. render the deploy files from the package (compose, Kubernetes, launch.sh) and
     validate compose.yaml against the Compose Specification;
  4. copy package.yaml, evidence, licences, the build recipe and the model pin, and
     render the model notice, the build notes and README.md; refuse a README that names
     a kit path the kit does not hold (a buyer has only the kit);
  5. write MANIFEST; its sha256 is the kit's content digest;
  6. build the in-toto statement and sign it into receipt.dsse.json;
  7. write the deterministic ``.tar.gz``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from servekit.errors import PackageError, UsageError
from servekit.kit.archive import KitFile, kit_mtime, write_archive
from servekit.kit.command import container_env, image, serve_argv
from servekit.kit.compose import render_compose
from servekit.kit.k8s import render_k8s
from servekit.kit.launch import render_launch
from servekit.kit.notices import BUILD_NOTES, MODEL_NOTICE, render_build_notes, render_model_notice
from servekit.kit.readme import missing_paths, render_readme
from servekit.kit.sources import copy_sources, snapshot
from servekit.kit.validate import validate_compose
from servekit.package import CheckReport, check, enforce, load_package
from servekit.package.files import (
    COMPOSE_FILE,
    EXECUTABLES,
    LAUNCH_FILE,
    MANIFEST_FILE,
    PIN_FILE,
    README_FILE,
    RECEIPT_FILE,
)
from servekit.package.load import LoadedPackage
from servekit.package.models import Package
from servekit.receipts.canonical import sha256_hex
from servekit.receipts.keys import SigningKey, load_signing_key
from servekit.receipts.manifest import kit_digest, manifest_entries, render_manifest
from servekit.receipts.models import ServeRecord
from servekit.receipts.signing import sign_payload
from servekit.receipts.statement import ReceiptInputs, build_statement, statement_bytes


@dataclass(frozen=True)
class BuiltKit:
    """A built kit: its files and the archive bytes."""

    package_id: str
    version: str
    key_id: str
    kit_digest: str
    files: tuple[KitFile, ...]
    archive: bytes
    signed_at: dt.datetime

    def as_dict(self) -> dict[str, Any]:
        return {
            "package": self.package_id,
            "version": self.version,
            "key_id": self.key_id,
            "signed_at": self.signed_at.strftime("%Y-%m-%dT%H:%M:%SZ"),
            "kit_digest": f"sha256:{self.kit_digest}",
            "archive_sha256": sha256_hex(self.archive),
            "archive_bytes": len(self.archive),
            "files": [
                {"path": f.path, "size": len(f.data), "sha256": sha256_hex(f.data)}
                for f in self.files
            ],
        }


def render_deploy(package: Package) -> dict[str, bytes]:
    """Every deploy file, rendered from the package (step 3)."""
    compose = render_compose(package)
    validate_compose(compose)
    return {COMPOSE_FILE: compose, LAUNCH_FILE: render_launch(package), **render_k8s(package)}


def _content(loaded: LoadedPackage, report: CheckReport, key_id: str) -> dict[str, bytes]:
    package = loaded.package
    files = {**render_deploy(package), **copy_sources(loaded)}  # 3, 4
    files[MODEL_NOTICE] = render_model_notice(package)
    files[BUILD_NOTES] = render_build_notes(package)
    files[README_FILE] = render_readme(package, report, key_id)
    _check_readme_paths(files)
    return files


def _check_readme_paths(files: dict[str, bytes]) -> None:
    """Refuse a README that sends the buyer to a file the kit does not hold (step 4).

    MANIFEST and the receipt are written after the README; they count as held.
    """
    held = set(files) | {MANIFEST_FILE, RECEIPT_FILE}
    missing = missing_paths(files[README_FILE].decode("utf-8"), held)
    if missing:
        raise PackageError(
            f"the kit's {README_FILE} names {', '.join(missing)}, which the kit does not hold",
            hint="the text comes from package.yaml (summary, workloads, disclosures): name only "
            "files the kit carries (docs/kit.md lists them), or say where else to get the file",
        )


def _serve_record(package: Package) -> ServeRecord:
    return ServeRecord(
        argv=serve_argv(package),
        env=package.serve.env,
        port=package.serve.port,
        served_model_name=package.serve.served_model_name,
        image=image(package),
    )


def _sign(
    package: Package,
    report: CheckReport,
    files: dict[str, bytes],
    key: SigningKey,
    signed_at: dt.datetime,
) -> bytes:
    manifest = files[MANIFEST_FILE]
    inputs = ReceiptInputs(
        package=package,
        report=report,
        serve=_serve_record(package),
        kit_digest=kit_digest(manifest),
        digests={path: sha256_hex(data) for path, data in files.items()},
        key_id=key.public.key_id,
        pin_file=PIN_FILE if PIN_FILE in files else None,
        signed_at=signed_at,
    )
    return sign_payload(statement_bytes(build_statement(inputs)), key)


def _check_env(package: Package) -> None:
    names = [v.name for v in container_env(package)]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise PackageError(
            f"serve.env sets {', '.join(duplicates)} more than once",
            hint="each variable may appear once; the deploy files cannot express both values",
        )


SOURCE_DATE_EPOCH = "SOURCE_DATE_EPOCH"
"""The reproducible-builds variable (reproducible-builds.org/specs/source-date-epoch):
seconds since 1970-01-01 UTC, used as the signing time when set."""


def source_date_epoch(environ: Mapping[str, str]) -> dt.datetime | None:
    """The time ``SOURCE_DATE_EPOCH`` names in ``environ``, or None when it is unset or empty.

    A value that is not a whole, non-negative number of seconds is refused rather than
    replaced by the clock: a rebuild that silently took the clock would not reproduce.
    """
    raw = environ.get(SOURCE_DATE_EPOCH, "")
    if not raw:
        return None
    if not raw.isascii() or not raw.isdigit():
        raise UsageError(
            f"{SOURCE_DATE_EPOCH} must be a whole number of seconds since 1970-01-01 UTC "
            f"(got {raw!r})",
            hint=f"e.g. {SOURCE_DATE_EPOCH}=1764547200, or unset it to sign at the current time",
        )
    try:
        return dt.datetime.fromtimestamp(int(raw), dt.UTC)
    except (OverflowError, OSError, ValueError) as exc:
        raise UsageError(f"{SOURCE_DATE_EPOCH}={raw} is not a time servekit can record") from exc


def signing_time(signed_at: dt.datetime | None = None) -> dt.datetime:
    """The receipt's signing time: ``signed_at`` (timezone-aware) or now, UTC, whole seconds."""
    when = signed_at or dt.datetime.now(dt.UTC)
    if when.tzinfo is None:
        raise UsageError(
            "the signing time needs a timezone", hint="for example 2026-01-31T12:00:00Z"
        )
    return when.astimezone(dt.UTC).replace(microsecond=0)


def _check_published(package: Package, signed_at: dt.datetime) -> None:
    if package.published is not None and package.published > signed_at.date():
        raise PackageError(
            f"published is {package.published}, after the signing time {signed_at:%Y-%m-%d}",
            hint="a kit cannot be signed before the date it claims to be published; "
            "correct `published` in package.yaml",
        )


def build_kit(
    package_dir: Path | str, key_path: Path, *, signed_at: dt.datetime | None = None
) -> BuiltKit:
    """Build the kit of the package in ``package_dir``, signed with the key at ``key_path``.

    ``signed_at`` (default: now) is recorded in the receipt; the same package, key and
    signing time always give the same archive bytes.
    """
    when = signing_time(signed_at)
    loaded = snapshot(load_package(package_dir))  # every file read once: what is checked ships
    _check_published(loaded.package, when)
    report = check(loaded)  # 1
    enforce(report)
    key = load_signing_key(key_path)  # 2
    _check_env(loaded.package)
    files = _content(loaded, report, key.public.key_id)  # 3, 4
    files[MANIFEST_FILE] = render_manifest(manifest_entries(files))  # 5
    files[RECEIPT_FILE] = _sign(loaded.package, report, files, key, when)  # 6
    kit_files = tuple(KitFile(p, d, p in EXECUTABLES) for p, d in sorted(files.items()))
    return BuiltKit(
        package_id=loaded.package.id,
        version=loaded.package.version,
        key_id=key.public.key_id,
        kit_digest=kit_digest(files[MANIFEST_FILE]),
        files=kit_files,
        archive=write_archive(kit_files, kit_mtime(loaded.package)),  # 7
        signed_at=when,
    )


def write_kit(kit: BuiltKit, out: Path) -> None:
    """Write the archive to ``out`` (its directory must exist)."""
    try:
        out.write_bytes(kit.archive)
    except OSError as exc:
        raise UsageError(f"cannot write {out}: {exc.strerror}", hint="check the -o path") from exc
