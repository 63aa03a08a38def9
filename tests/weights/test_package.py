"""``--package``: the pin goes into the package; package.yaml keeps everything else."""

from __future__ import annotations

import difflib
import io
import json
import shutil
from pathlib import Path

import pytest
from ruamel.yaml import YAML

from servekit.errors import FileChangedError, PackageError, UsageError
from servekit.package.files import PIN_FILE
from servekit.package.load import load_package
from servekit.weights.hub import Hub
from servekit.weights.models import WeightsPin
from servekit.weights.package import package_pin, pin_into_package
from servekit.weights.pin import pin_repo
from tests.hubserver import FakeRepo, HubServer, model_files

ROOT = Path(__file__).resolve().parents[2]
K3 = ROOT / "examples" / "packages" / "kimi-k3-8xb300"


@pytest.fixture
def package(tmp_path: Path) -> Path:
    return Path(shutil.copytree(K3, tmp_path / "k3"))


@pytest.fixture
def k3_pin(hub_server: HubServer, monkeypatch: pytest.MonkeyPatch) -> WeightsPin:
    monkeypatch.delenv("HF_TOKEN", raising=False)
    repo = hub_server.add_repo(FakeRepo("moonshotai/Kimi-K3"))
    repo.commit(model_files(30))
    return pin_repo("moonshotai/Kimi-K3", "main", hub=Hub(endpoint=hub_server.url))


def test_the_pin_is_written_and_only_the_model_fields_change(
    package: Path, k3_pin: WeightsPin
) -> None:
    before = (package / "package.yaml").read_text()
    written = pin_into_package(k3_pin, package)
    assert written == package / PIN_FILE and written.is_file()
    after = (package / "package.yaml").read_text()
    changed = [
        line
        for line in difflib.ndiff(before.splitlines(), after.splitlines())
        if line.startswith(("+ ", "- "))
    ]
    assert sorted(line[2:].split(":")[0].strip() for line in changed) == sorted(
        [*("commit", "tree_digest", "total_bytes", "shard_count") * 2, "files"]
    )
    assert "# The source page gives the tree digest but not the commit id" in after
    model = load_package(package).package.model
    assert (model.commit, model.tree_digest, model.files) == (
        k3_pin.commit,
        k3_pin.tree_digest,
        PIN_FILE,
    )
    assert (model.total_bytes, model.shard_count) == (k3_pin.total_bytes, 3)
    assert package_pin(package)[1] == k3_pin


def test_pinning_again_keeps_the_file_and_changes_nothing_else(
    package: Path, k3_pin: WeightsPin
) -> None:
    pin_into_package(k3_pin, package)
    first = (package / "package.yaml").read_text()
    pin_into_package(k3_pin, package)
    assert (package / "package.yaml").read_text() == first


def test_a_pin_of_another_repo_changes_nothing(package: Path, hub_server: HubServer) -> None:
    repo = hub_server.add_repo(FakeRepo("org/other"))
    repo.commit(model_files(31))
    pin = pin_repo("org/other", "main", hub=Hub(endpoint=hub_server.url))
    before = (package / "package.yaml").read_text()
    with pytest.raises(UsageError, match="the package serves moonshotai/Kimi-K3"):
        pin_into_package(pin, package)
    assert (package / "package.yaml").read_text() == before
    assert not (package / PIN_FILE).exists()


def test_a_pin_file_that_disagrees_with_package_yaml_is_refused(
    package: Path, k3_pin: WeightsPin
) -> None:
    pin_into_package(k3_pin, package)
    manifest = package / "package.yaml"
    text = manifest.read_text().replace(k3_pin.tree_digest, "sha256:" + "1" * 64)
    manifest.write_text(text)
    with pytest.raises(
        FileChangedError, match=r"disagrees with package\.yaml on model\.tree_digest"
    ):
        package_pin(package)


def test_a_package_without_a_pin_file_has_only_its_digest(package: Path) -> None:
    loaded, pin = package_pin(package)
    assert pin is None and loaded.package.model.tree_digest.startswith("sha256:")


def test_a_local_pin_is_held_to_the_tree_and_a_named_commit_to_the_package(
    tmp_path: Path,
) -> None:
    tiny = Path(shutil.copytree(ROOT / "examples" / "packages" / "tiny-sim", tmp_path / "tiny"))
    loaded, pin = package_pin(tiny)  # made by `servekit model digest`: no repo, no commit
    assert pin is not None and pin.repo is None and pin.commit is None
    assert pin.tree_digest == loaded.package.model.tree_digest
    pin_file = tiny / "model-pin.json"
    data = json.loads(pin_file.read_text())
    named = {"repo": loaded.package.model.repo, "commit": "1" * 40}
    pin_file.write_text(json.dumps(data | named))
    with pytest.raises(FileChangedError, match=r"disagrees with package\.yaml on model\.commit"):
        package_pin(tiny)
    pin_file.write_text("{not json")
    with pytest.raises(PackageError, match="not valid JSON"):
        package_pin(tiny)


def _changed_keys(before: str, after: str) -> list[str]:
    lines = difflib.ndiff(before.splitlines(), after.splitlines())
    return sorted(line[2:].split(":")[0].strip() for line in lines if line.startswith(("+ ", "- ")))


def test_a_package_yaml_indented_its_own_way_keeps_its_layout(
    package: Path, k3_pin: WeightsPin
) -> None:
    manifest = package / "package.yaml"
    editor = YAML()
    editor.width = 4096
    editor.indent(mapping=4, sequence=6, offset=4)
    out = io.StringIO()
    editor.dump(editor.load(manifest.read_text()), out)
    manifest.write_text(out.getvalue())
    before = manifest.read_text()
    pin_into_package(k3_pin, package)
    assert _changed_keys(before, manifest.read_text()) == sorted(
        [*("commit", "tree_digest", "total_bytes", "shard_count") * 2, "files"]
    )


def test_a_layout_no_editor_reproduces_is_rewritten_in_the_common_one(
    package: Path, k3_pin: WeightsPin
) -> None:
    manifest = package / "package.yaml"
    odd = manifest.read_text().replace("\nmodel:\n", "\nmodel:   \n", 1)  # trailing spaces
    manifest.write_text(odd)
    pin_into_package(k3_pin, package)
    assert "model:   \n" not in manifest.read_text()
    assert load_package(package).package.model.tree_digest == k3_pin.tree_digest


def test_a_pin_without_weight_files_is_refused(package: Path, k3_pin: WeightsPin) -> None:
    empty = k3_pin.model_copy(update={"shard_count": 0, "total_bytes": 0})
    with pytest.raises(UsageError, match="has no weight files; a package needs at least one"):
        pin_into_package(empty, package)


def test_a_write_that_fails_leaves_the_package_as_it_was(package: Path, k3_pin: WeightsPin) -> None:
    before = (package / "package.yaml").read_text()
    (package / Path(PIN_FILE).parent).write_text("a file where the pin's folder should be")
    with pytest.raises(OSError):
        pin_into_package(k3_pin, package)
    assert (package / "package.yaml").read_text() == before
