"""The kit builder: claim rules first, safe keys, deterministic bytes, the promised layout."""

from __future__ import annotations

import base64
import datetime as dt
import gzip
import io
import json
import re
import shutil
import tarfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from servekit.errors import ClaimRuleError, PackageError, SigningKeyError, UsageError
from servekit.kit.archive import KitFile, kit_mtime, write_archive
from servekit.kit.build import build_kit, render_deploy
from servekit.kit.sources import copy_sources, snapshot
from servekit.package import load_package
from servekit.receipts.keys import load_public_key, load_trust_store
from servekit.verify.kit import verify_kit
from tests.cli.helpers import run_cli
from tests.kit.helpers import EXAMPLES, KEYS, PACKAGE_DIR, ROOT, package_copy, private_key
from tests.yamlio import dump_yaml

K3 = ROOT / "examples" / "packages" / "kimi-k3-8xb300"

SIGNED_AT = dt.datetime(2026, 12, 2, 18, tzinfo=dt.UTC)  # after every example's date


@pytest.fixture
def key(tmp_path: Path) -> Path:
    return private_key("publisher", tmp_path)


def _members(archive: bytes) -> list[tarfile.TarInfo]:
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:gz") as tar:
        return tar.getmembers()


def _statement(files: dict[str, bytes]) -> dict[str, Any]:
    envelope = json.loads(files["receipt.dsse.json"])
    return dict(json.loads(base64.b64decode(envelope["payload"])))


@pytest.mark.parametrize("package_dir", [PACKAGE_DIR, *EXAMPLES], ids=lambda p: p.name)
def test_two_builds_are_byte_identical(package_dir: Path, key: Path) -> None:
    assert (
        build_kit(package_dir, key, signed_at=SIGNED_AT).archive
        == build_kit(package_dir, key, signed_at=SIGNED_AT).archive
    )


def test_the_same_package_copied_elsewhere_gives_the_same_bytes(tmp_path: Path, key: Path) -> None:
    assert (
        build_kit(package_copy(tmp_path), key, signed_at=SIGNED_AT).archive
        == build_kit(PACKAGE_DIR, key, signed_at=SIGNED_AT).archive
    )


def test_k3_kit_is_under_3_mb(key: Path) -> None:
    assert len(build_kit(K3, key).archive) < 3 * 1024 * 1024


def test_archive_entries_are_normalized(key: Path) -> None:
    kit = build_kit(PACKAGE_DIR, key)
    members = _members(kit.archive)
    assert [m.name for m in members] == sorted(m.name for m in members)
    mtime = kit_mtime(load_package(PACKAGE_DIR).package)
    assert mtime == 1764460800  # the package's published date, 00:00 UTC
    for m in members:
        assert (m.isreg(), m.uid, m.gid, m.uname, m.gname, m.mtime) == (True, 0, 0, "", "", mtime)
        assert m.mode == (0o755 if m.name == "deploy/launch.sh" else 0o644)


def test_gzip_header_has_no_time_and_no_name(key: Path) -> None:
    archive = build_kit(PACKAGE_DIR, key).archive
    assert archive[:3] == b"\x1f\x8b\x08"
    assert archive[3] & 0x08 == 0, "FNAME flag set"
    assert archive[4:8] == b"\x00\x00\x00\x00"
    assert gzip.decompress(archive)


def test_write_archive_ignores_input_order() -> None:
    files = [KitFile("b", b"2"), KitFile("a/x", b"1", executable=True)]
    assert write_archive(files, 0) == write_archive(list(reversed(files)), 0)


def test_layout(key: Path) -> None:
    names = {f.path for f in build_kit(PACKAGE_DIR, key).files}
    assert names == {
        "MANIFEST",
        "README.md",
        "receipt.dsse.json",
        "package.yaml",
        "deploy/compose.yaml",
        "deploy/launch.sh",
        "deploy/k8s/deployment.yaml",
        "deploy/k8s/service.yaml",
        "deploy/build/BUILD.md",
        "evidence/run-a.jsonl",
        "evidence/run-b.jsonl",
        "licenses/MODEL_LICENSE.md",
        "licenses/MODEL_NOTICE.md",
        "licenses/PACKAGE_LICENSE.md",
        "model/pin.json",
    }


def test_k3_kit_ships_its_build_recipe_pinned_to_its_commit(key: Path) -> None:
    files = {f.path: f.data for f in build_kit(K3, key).files}
    recipe = files["deploy/build/Dockerfile.vllm-k3-wheel"]
    assert recipe == (K3 / "build" / "Dockerfile.vllm-k3-wheel").read_bytes()
    notes = files["deploy/build/BUILD.md"].decode()
    assert "f68f4fdd" in notes and "FlashKDA" in notes and "validation run" in notes
    notice = files["licenses/MODEL_NOTICE.md"].decode()
    assert "Statement of modifications" in notice and "no byte is changed" in notice


def test_package_yaml_and_evidence_are_copied_byte_for_byte(key: Path) -> None:
    files = {f.path: f.data for f in build_kit(PACKAGE_DIR, key).files}
    for name in ("package.yaml", "evidence/run-a.jsonl", "model/pin.json"):
        assert files[name] == (PACKAGE_DIR / name).read_bytes()


def test_no_private_key_material_in_the_kit(key: Path) -> None:
    for f in build_kit(PACKAGE_DIR, key).files:
        assert b"PRIVATE KEY" not in f.data, f.path
        assert key.read_bytes().splitlines()[1] not in f.data, f.path


def test_receipt_records_figures_with_provenance_and_recomputed_values(key: Path) -> None:
    files = {f.path: f.data for f in build_kit(PACKAGE_DIR, key).files}
    predicate = _statement(files)["predicate"]
    figures = {f["id"]: f for f in predicate["figures"]}
    ttft = figures["ttft-p50-c1"]
    assert ttft["provenance"] == "measured" and set(ttft["per_run"]) == {"run-a", "run-b"}
    assert abs(ttft["recomputed"] - ttft["value"]) <= 0.05
    assert predicate["simulator"] is False and predicate["claim_rules"]["violations"] == 0
    assert predicate["publisher_key_id"] == load_public_key(KEYS / "publisher.pub").key_id
    assert [r["file"] for r in predicate["runs"]] == [
        "evidence/run-a.jsonl",
        "evidence/run-b.jsonl",
    ]
    assert predicate["measurement_dates"]["first_run"] == "2025-11-29"


def test_k3_receipt_marks_every_figure_reported(key: Path) -> None:
    files = {f.path: f.data for f in build_kit(K3, key).files}
    statement = _statement(files)
    assert {f["provenance"] for f in statement["predicate"]["figures"]} == {"reported"}
    assert all(f["recomputed"] is None and f["source"] for f in statement["predicate"]["figures"])
    names = [s["name"] for s in statement["subject"]]
    assert names == ["servekit-kit:kimi-k3-8xb300@1.0.0", "hf://moonshotai/Kimi-K3@" + "0" * 40]


def test_simulator_runs_are_marked(tmp_path: Path, key: Path) -> None:
    def simulated(data: dict[str, Any]) -> None:
        for run in data["measurements"]["runs"]:
            run["simulator"] = True
        data["disclosures"].append(
            {"topic": "simulator", "title": "Simulator", "text": "Measured against the simulator."}
        )

    pkg = package_copy(tmp_path, simulated)
    for name in ("run-a", "run-b"):  # the evidence headers must say so too (rule SK115)
        path = pkg / "evidence" / f"{name}.jsonl"
        header, rest = path.read_text().split("\n", 1)
        path.write_text(json.dumps({**json.loads(header), "simulator": True}) + "\n" + rest)
    files = {f.path: f.data for f in build_kit(pkg, key).files}
    predicate = _statement(files)["predicate"]
    assert predicate["simulator"] is True
    assert all(f["simulator"] for f in predicate["figures"])
    assert "simulator" in files["README.md"].decode()


def _two_nodes(pkg: Path) -> None:
    """Make the copied fixture a 2-node, 4-GPU package whose evidence says so too."""
    data = yaml.safe_load((pkg / "package.yaml").read_text())
    data["hardware"]["target"] |= {"count": 4, "nodes": 2}
    data["serve"]["args"] += ["--pipeline-parallel-size", "2"]
    data["measurements"]["figures"] = [
        f | {"measured_on": f["measured_on"] | {"hardware": "4x H200"}}
        for f in data["measurements"]["figures"]
        if "scope" not in f  # a per-GPU throughput would change with the GPU count
    ]
    (pkg / "package.yaml").write_text(dump_yaml(data))
    for name in ("run-a", "run-b"):
        path = pkg / "evidence" / f"{name}.jsonl"
        header, rest = path.read_text().split("\n", 1)
        path.write_text(json.dumps({**json.loads(header), "gpus": 4}) + "\n" + rest)


def test_a_two_node_package_builds_a_leaderworkerset_kit_that_verifies(
    tmp_path: Path, key: Path
) -> None:
    pkg = package_copy(tmp_path)
    _two_nodes(pkg)
    kit = build_kit(pkg, key)
    names = {f.path for f in kit.files}
    assert "deploy/k8s/leaderworkerset.yaml" in names and "deploy/k8s/deployment.yaml" not in names
    (tmp_path / "kit.tar.gz").write_bytes(kit.archive)
    result = verify_kit(
        tmp_path / "kit.tar.gz", load_trust_store(KEYS / "publisher.pub", bare_key=True)
    )
    assert result.package_id == "kit-fixture"


def test_claim_rule_violation_refuses_the_build(tmp_path: Path, key: Path) -> None:
    def inflate(data: dict[str, Any]) -> None:
        data["measurements"]["figures"][0]["value"] *= 0.5  # better than the records show

    with pytest.raises(ClaimRuleError) as info:
        build_kit(package_copy(tmp_path, inflate), key)
    assert info.value.violations[0].rule == "SK101"


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_a_key_others_can_read_is_refused(tmp_path: Path, key: Path, mode: int) -> None:
    key.chmod(mode)
    with pytest.raises(SigningKeyError, match="accessible by group or others"):
        build_kit(PACKAGE_DIR, key)


def test_a_public_key_cannot_sign(tmp_path: Path) -> None:
    pub = tmp_path / "servekit.pub"
    pub.write_bytes((KEYS / "publisher.pub").read_bytes())
    pub.chmod(0o600)
    with pytest.raises(SigningKeyError, match="not an unencrypted PEM private key"):
        build_kit(PACKAGE_DIR, pub)


def test_a_package_without_an_image_is_refused(tmp_path: Path, key: Path) -> None:
    def no_image(data: dict[str, Any]) -> None:
        del data["engine"]["image"]

    with pytest.raises(PackageError, match=r"engine\.image is not set"):
        build_kit(package_copy(tmp_path, no_image), key)


def test_gpus_must_split_over_nodes(tmp_path: Path) -> None:
    def uneven(data: dict[str, Any]) -> None:
        data["hardware"]["target"] |= {"count": 3, "nodes": 2}

    package = load_package(package_copy(tmp_path, uneven)).package
    with pytest.raises(PackageError, match="does not split over 2 nodes"):
        render_deploy(package)


def test_the_receipt_records_its_signing_time(key: Path) -> None:
    when = dt.datetime(2026, 3, 1, 8, 0, 5, 123456, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    kit = build_kit(PACKAGE_DIR, key, signed_at=when)
    statement = _statement({f.path: f.data for f in kit.files})
    assert statement["predicate"]["signed_at"] == "2026-03-01T06:00:05Z"
    with pytest.raises(UsageError, match="timezone"):
        build_kit(PACKAGE_DIR, key, signed_at=dt.datetime(2026, 3, 1))


def test_a_published_date_after_the_signing_time_is_refused(key: Path) -> None:
    before = dt.datetime(2025, 11, 29, 23, 59, tzinfo=dt.UTC)  # the fixture says 2025-11-30
    with pytest.raises(PackageError, match="after the signing time 2025-11-29"):
        build_kit(PACKAGE_DIR, key, signed_at=before)
    assert build_kit(PACKAGE_DIR, key, signed_at=before + dt.timedelta(minutes=1)).files


@pytest.mark.parametrize(
    ("field", "name", "kit_path"),
    [
        ("license", "licenses/MODEL_NOTICE.md", "licenses/MODEL_NOTICE.md"),
        ("license", "MODEL_NOTICE.md", "licenses/MODEL_NOTICE.md"),
        ("license", "licenses/model_notice.md", "licenses/model_notice.md"),
        ("recipe", "build/BUILD.md", "deploy/build/BUILD.md"),
    ],
)
def test_a_package_file_may_not_land_on_a_generated_kit_path(
    tmp_path: Path, key: Path, field: str, name: str, kit_path: str
) -> None:
    def edit(data: dict[str, Any]) -> None:
        if field == "license":
            data["license"]["file"] = name
        else:
            data["engine"]["build_recipe"] = name

    pkg = package_copy(tmp_path, edit)
    (pkg / name).parent.mkdir(parents=True, exist_ok=True)
    (pkg / name).write_text("not the generated file\n")
    with pytest.raises(PackageError, match=f"would become {kit_path}"):
        build_kit(pkg, key)


def test_a_kit_path_longer_than_a_tar_name_is_refused(tmp_path: Path, key: Path) -> None:
    name = "evidence/" + "r" * 95 + ".jsonl"

    def edit(data: dict[str, Any]) -> None:
        data["measurements"]["runs"][1]["file"] = name

    pkg = package_copy(tmp_path, edit)
    (pkg / "evidence" / "run-b.jsonl").rename(pkg / name)
    with pytest.raises(PackageError, match="longer than 100 bytes"):
        build_kit(pkg, key)


def test_two_package_files_differing_only_in_case_are_refused(tmp_path: Path, key: Path) -> None:
    def edit(data: dict[str, Any]) -> None:
        data["measurements"]["runs"][1]["file"] = "evidence/RUN-A.jsonl"

    pkg = package_copy(tmp_path, edit)
    (pkg / "evidence" / "run-b.jsonl").rename(pkg / "evidence" / "RUN-A.jsonl")
    with pytest.raises(PackageError, match="one file on a case-insensitive disk"):
        build_kit(pkg, key)


def _disclose(text: str) -> Any:
    def edit(data: dict[str, Any]) -> None:
        data["disclosures"][0]["text"] = text

    return edit


@pytest.mark.parametrize(
    "named",
    ["model/converted-pin.json", "Model/pin.json", "deploy/helm/", "evidence/run-9.jsonl."],
)
def test_a_readme_naming_a_file_the_kit_lacks_is_refused(
    tmp_path: Path, key: Path, named: str
) -> None:
    pkg = package_copy(
        tmp_path, _disclose(f"Check it with `servekit verify weights DIR --pin {named}`")
    )
    with pytest.raises(PackageError, match="which the kit does not hold") as info:
        build_kit(pkg, key, signed_at=SIGNED_AT)
    assert named.rstrip(".") in info.value.message


def test_a_readme_may_name_the_kits_files_folders_and_paths_outside_it(
    tmp_path: Path, key: Path
) -> None:
    text = (
        "See deploy/k8s/, evidence/ and model/pin.json. Mount it at /models/x/model/y; "
        "my-model/a.json and scripts/gpu/convert.py are not kit paths."
    )
    kit = build_kit(package_copy(tmp_path, _disclose(text)), key, signed_at=SIGNED_AT)
    assert text.encode() in next(f.data for f in kit.files if f.path == "README.md")


def test_a_kit_without_evidence_does_not_point_to_evidence(key: Path) -> None:
    readme = next(
        f.data for f in build_kit(K3, key, signed_at=SIGNED_AT).files if f.path == "README.md"
    )
    assert b"evidence/" not in readme and b"holds no raw evidence" in readme


@pytest.mark.parametrize("trust", ["trust.toml", "publisher.pub"])
def test_the_readme_unpack_line_works_with_a_trust_file_or_the_publishers_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: Path, trust: str
) -> None:
    """The README's command, run as shown, with a store's trust file (`trust.toml`) or, as
    its text says, the publisher's public key named in its place."""
    readme = next(
        f.data.decode()
        for f in build_kit(PACKAGE_DIR, key, signed_at=SIGNED_AT).files
        if f.path == "README.md"
    )
    line = next(x for x in readme.splitlines() if x.startswith("servekit kit unpack"))
    assert "--trust trust.toml" in line and "PUBLISHER.pub" not in readme
    assert "/keys/trust.toml" in readme and "public key file" in readme
    for name in ("trust.toml", "publisher.pub", "untrusted.pub"):
        shutil.copyfile(KEYS / name, tmp_path / name)
    (tmp_path / "KIT.tar.gz").write_bytes(build_kit(PACKAGE_DIR, key, signed_at=SIGNED_AT).archive)
    monkeypatch.chdir(tmp_path)
    argv = line.replace("trust.toml", trust).split()[1:]
    code, out, err = run_cli(argv)
    assert code == 0, out + err
    assert (tmp_path / "kit" / "MANIFEST").is_file()


def test_a_definition_changed_between_the_load_and_the_snapshot_is_refused(
    tmp_path: Path,
) -> None:
    """build_kit reads every package file once (snapshot) after loading package.yaml: a
    package.yaml changed in between must stop the build, whatever it became."""
    package = package_copy(tmp_path)
    text = (package / "package.yaml").read_text()
    edited = re.sub(r"^version: .*$", "version: 9.9.9", text, count=1, flags=re.M)
    assert edited != text
    other = (edited.encode(), b"", b"schema_version: [\n", text.encode() + b"# \xff\xfe\n")
    for copy in other:  # another version; empty; not YAML; a comment that is not UTF-8
        loaded = load_package(package)
        (package / "package.yaml").write_bytes(copy)
        with pytest.raises(PackageError, match="changed while the kit was built"):
            snapshot(loaded)
        (package / "package.yaml").write_text(text)
    assert snapshot(load_package(package)).package == load_package(package).package


def test_what_the_rules_checked_is_what_the_kit_carries(tmp_path: Path) -> None:
    """Once read, the package's files come from memory: evidence rewritten on disk during
    the build does not reach the kit."""
    package = package_copy(tmp_path)
    loaded = snapshot(load_package(package))
    evidence = sorted((package / "evidence").glob("*.jsonl"))[0]
    before = evidence.read_bytes()
    evidence.write_bytes(before[: len(before) // 2])
    copied = copy_sources(loaded)
    assert copied[f"evidence/{evidence.name}"] == before
