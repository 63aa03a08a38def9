"""Text a package supplies reaches the terminal as text: C0 and C1 controls and bidi
overrides are escaped, and rich markup is printed, not obeyed."""

from __future__ import annotations

import shutil
import unicodedata
from pathlib import Path

import pytest

from tests.assets.make_kit_fixtures import KEYS, private_key
from tests.cli.helpers import run_cli
from tests.functional.helpers import EXAMPLES

# As YAML writes it (double-quoted): ESC, NEL (C1), RLO and LRI (bidi), and markup.
HOSTILE = r'"X \u202E gnp \e[31m [bold]B[/bold] \x85 \u2066 end"'
ESCAPED = ["\\u202e", "\\x1b", "\\x85", "\\u2066", "[bold]B[/bold]"]
FIELDS = [
    ("name: Synthetic tiny model on the servekit simulator (example)", "name: {}"),
    ("publisher: servekit examples", "publisher: {}"),
    ("      label: TTFT p50\n", "      label: {}\n"),
    ("    title: Only short contexts were exercised", "    title: {}"),
    ("    name: CC0 1.0 (synthetic files)", "    name: {}"),
    ("  name: servekit Package License", "  name: {}"),
]


def assert_inert(text: str) -> None:
    """No control, format or bidi character but newlines; the hostile text shown escaped."""
    live = {c for c in text if c != "\n" and unicodedata.category(c) in {"Cc", "Cf"}}
    assert not live, sorted(map(ascii, live))
    for shown in ESCAPED:
        assert shown in text, (shown, text)


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    package = tmp_path_factory.mktemp("hostile") / "pkg"
    shutil.copytree(EXAMPLES / "tiny-sim", package)
    path = package / "package.yaml"
    text = path.read_text(encoding="utf-8")
    for old, new in FIELDS:
        assert old in text, old
        text = text.replace(old, new.format(HOSTILE), 1)
    path.write_text(text, encoding="utf-8")
    return package


def _run(argv: list[str]) -> str:
    code, out, err = run_cli(argv)
    assert code == 0, err
    return out + err


def test_package_check(hostile: Path) -> None:
    assert_inert(_run(["package", "check", str(hostile)]))


def test_catalog_show(hostile: Path) -> None:
    assert_inert(_run(["catalog", "show", str(hostile)]))


def test_verify_kit(hostile: Path, tmp_path: Path) -> None:
    key = private_key("publisher", tmp_path)
    kit = tmp_path / "kit.tar.gz"
    built = _run(["kit", "build", str(hostile), "--key", str(key), "-o", str(kit)])
    assert "\x1b" not in built
    trust = KEYS / "publisher.pub"
    assert_inert(_run(["verify", "kit", str(kit), "--trust", str(trust)]))


def test_fit_package_with_a_hostile_model_directory(tmp_path: Path) -> None:
    package = EXAMPLES / "llama-850m-h200"
    model = tmp_path / "m \u202e gnp \x1b[31m [bold]B[/bold] \x85 \u2066"
    shutil.copytree(package / "model", model)
    assert_inert(_run(["fit", "--package", str(package), str(model)]))


def test_cli_modules_escape_only_through_output_plain() -> None:
    """rich's ``escape`` alone leaves control characters live: data goes through
    ``servekit.cli.output.plain`` (output.py's error renderer applies both itself)."""
    cli = Path(__file__).resolve().parents[2] / "src" / "servekit" / "cli"
    users = sorted(p.name for p in cli.glob("*.py") if "rich.markup import escape" in p.read_text())
    assert users == ["output.py"]
