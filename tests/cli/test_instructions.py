"""Every instruction works: each `servekit` command shown to a person names a command
and options that exist.

Commands are collected from the page templates, README.md and docs/*.md, the README of
every example kit (rendered by the kit builder) and every string in servekit's source
(hints, help texts, messages), then walked through the click command tree Typer builds.
In code (a Markdown code span or block, an HTML ``<code>``/``<pre>``, the kit README's
code) a command must exist from its first word; in prose (``servekit writes ...``) only
an occurrence that starts with a real command is walked.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer.main

from servekit.cli.main import app
from servekit.kit.readme import render_readme
from servekit.package import check, load_package
from tests.cli.helpers import run_cli
from tests.kit.helpers import EXAMPLES, ROOT

SRC = ROOT / "src" / "servekit"
ROOT_COMMAND: Any = typer.main.get_command(app)
SHOWN_WRONG_ON_PURPOSE = {
    ("docs/performance.md", "servekit bench run --no-such-option"),  # an argument error, timed
}

# `servekit` at a command position: the start, or after a prompt, `&&`, `|`, `;` or `(`.
IN_CODE = re.compile(r"(?:^|(?<=\$ )|(?<=&& )|(?<=\| )|(?<=; )|(?<=\())servekit(?= )", re.M)
IN_PROSE = re.compile(r"(?<![\w/.$-])servekit(?= )")
STOP = re.compile(r"[`'\"<>|;)&#]|\s\\?\s*$")  # where a shown command ends
ELLIPSIS = {"...", "…"}
ENV_PREFIX = re.compile(r"\b[A-Z][A-Z0-9_]*=(?:\$\([^)\n]*\)|\S*)\s+(?=servekit )")


def _tokens(text: str) -> list[str]:
    """The words after `servekit` up to the end of the command (a quote, a pipe, a
    comment, a line end); a word ending in `.` or `,` ends the sentence and the command."""
    line = text.split("\n", 1)[0]
    end = STOP.search(line)
    words = (line[: end.start()] if end else line).split()
    out = []
    for word in words:
        if word in ELLIPSIS:
            break
        out.append(word.rstrip(".,:"))
        if word[-1] in ".,:" and not word.startswith("-"):
            break
    return out


def problem(tokens: list[str], *, strict: bool) -> str | None:
    """What is wrong with ``servekit TOKENS``, or None (also None for prose in lenient mode)."""
    command: Any = ROOT_COMMAND
    path = ["servekit"]
    for token in (t.strip("[]") for t in tokens):
        if re.fullmatch(r"--?[a-zA-Z][\w-]*(=.*)?", token):
            name = token.split("=")[0]
            if name not in {"-h", "--help"} and name not in _options(command):
                return f"`{' '.join(path)}` has no option {name}"
            continue
        subcommands = getattr(command, "commands", None)
        if subcommands is None:
            continue  # an argument of a leaf command
        if re.fullmatch(r"[A-Z_]+", token):
            return None  # a synopsis: `servekit [OPTIONS] COMMAND`
        if token not in subcommands:
            if not strict and (len(path) == 1 or not re.fullmatch(r"[a-z][a-z-]*", token)):
                return None  # prose: "servekit writes ...", "the servekit store API"
            return f"`{' '.join(path)}` has no command {token!r}"
        command = subcommands[token]
        path.append(token)
    return None


def _options(command: Any) -> set[str]:
    return {
        o
        for p in command.params
        for o in (*getattr(p, "opts", ()), *getattr(p, "secondary_opts", ()))
    }


def shown(text: str, *, strict: bool) -> Iterator[tuple[str, str | None]]:
    """(command as shown, its problem) for each `servekit` command in ``text``."""
    text = ENV_PREFIX.sub("", text)  # `VAR=value servekit ...` runs servekit
    for match in (IN_CODE if strict else IN_PROSE).finditer(text):
        tokens = _tokens(text[match.end() :])
        yield " ".join(["servekit", *tokens]), problem(tokens, strict=strict)


def _markdown(text: str) -> Iterator[tuple[str, bool]]:
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", text, re.M | re.S)
    for block in blocks:
        yield block.replace("\\\n", " "), True
    prose = re.sub(r"^```[^\n]*\n(.*?)^```", "", text, flags=re.M | re.S)
    yield from ((span, True) for span in re.findall(r"`([^`\n]+)`", prose))
    yield re.sub(r"`[^`\n]+`", "", prose), False


def _html(text: str) -> Iterator[tuple[str, bool]]:
    text = re.sub(r"\{\{.*?\}\}", "X", text)  # a Jinja value shown inside a command
    text = re.sub(r"\{%.*?%\}", "", text)
    for code in re.findall(r"<(?:code|pre)[^>]*>(.*?)</(?:code|pre)>", text, re.S):
        yield re.sub(r"<[^>]+>", "", code).replace("&lt;", "<").replace("&gt;", ">"), True
    yield text, False


def _docstrings(tree: ast.AST) -> set[int]:
    """Ids of the docstring nodes of ``tree``: help text in ``cli/``, notes elsewhere."""
    owners = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, owners)
        and ast.get_docstring(node, clean=False) is not None
        and isinstance(node.body[0], ast.Expr)
    }


def _python(path: Path) -> Iterator[tuple[str, bool]]:
    """Every string of a module (a hint, a message, a help text); docstrings only in
    ``cli/``, where they are the commands' --help, not notes for a reader of the code."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    notes = set() if path.parent.name == "cli" else _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in notes:
            yield node.value, False
            yield from ((span, True) for span in re.findall(r"`([^`\n]+)`", node.value))


def _problems(where: str, pieces: Iterator[tuple[str, bool]]) -> tuple[list[str], int]:
    found, count = [], 0
    for text, strict in pieces:
        for command, wrong in shown(text, strict=strict):
            count += 1
            if wrong and (where, command) not in SHOWN_WRONG_ON_PURPOSE:
                found.append(f"{where}: {command}: {wrong}")
    return found, count


def _sources() -> Iterator[tuple[str, Iterator[tuple[str, bool]]]]:
    for page in sorted(SRC.glob("**/templates/**/*.html")):
        yield str(page.relative_to(ROOT)), _html(page.read_text(encoding="utf-8"))
    for doc in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        yield str(doc.relative_to(ROOT)), _markdown(doc.read_text(encoding="utf-8"))
    for module in sorted(SRC.rglob("*.py")):
        yield str(module.relative_to(ROOT)), _python(module)


def test_every_command_in_pages_docs_and_source_exists() -> None:
    found, count = [], 0
    for where, pieces in _sources():
        wrong, seen = _problems(where, pieces)
        found += wrong
        count += seen
    assert count > 300, count  # the collector reads what it should
    assert not found, "\n".join(found)


@pytest.fixture(scope="module")
def readmes() -> dict[str, str]:
    """Each example kit's README.md, rendered as the kit builder renders it."""
    out = {}
    for directory in EXAMPLES:
        loaded = load_package(directory)
        out[directory.name] = render_readme(loaded.package, check(loaded), "KEYID").decode()
    return out


def test_every_command_in_the_example_kits_readmes_exists(readmes: dict[str, str]) -> None:
    found, count = [], 0
    for name, readme in readmes.items():
        wrong, seen = _problems(f"{name} kit README.md", _markdown(readme))
        found += wrong
        count += seen
    assert count >= 2 * len(readmes), count  # unpack and verify weights, at least
    assert not found, "\n".join(found)


@pytest.mark.parametrize(
    ("text", "strict", "wrong"),
    [
        ("create one: servekit store token add", False, "`servekit store` has no command 'token'"),
        ("`servekit kit unpack K D --force`", True, "`servekit kit unpack` has no option --force"),
        ("$ servekit verfiy kit K", True, "`servekit` has no command 'verfiy'"),
        ("run servekit bench run --concurency 4 now", False, "has no option --concurency"),
        ("servekit kit build. Then", False, None),
        ("servekit writes the kit", False, None),
        ("pg_dump -Fc servekit > dump", True, None),
        ("SERVEKIT_STORE_TOKEN=t servekit store downlaod x", True, "no command 'downlaod'"),
        ("A=$(date +%s) servekit kit build P --key K --signed-on T", True, "no option --signed-on"),
        ("`servekit store ...`", True, None),
        ("servekit kit unpack K D --trust P  # never tar -x", True, None),
    ],
)
def test_the_collector_finds_what_is_wrong(text: str, strict: bool, wrong: str | None) -> None:
    pieces = _python_like(text) if not strict else iter([(text.strip("`"), True)])
    problems = [p for _, p in shown(next(pieces)[0], strict=strict)]
    if wrong is None:
        assert problems in ([], [None]), problems
    else:
        assert problems and problems[0] is not None and wrong in problems[0], problems


def _python_like(text: str) -> Iterator[tuple[str, bool]]:
    yield text, False


def test_kit_unpack_into_a_full_directory_offers_no_force(tmp_path: Path) -> None:
    (tmp_path / "kit").mkdir()
    (tmp_path / "kit" / "old").write_text("x")
    kit = ROOT / "tests" / "assets" / "kit_valid.tar.gz"
    trust = ROOT / "tests" / "assets" / "keys" / "publisher.pub"
    code, _, err = run_cli(
        ["kit", "unpack", str(kit), str(tmp_path / "kit"), "--trust", str(trust)]
    )
    assert code == 2 and "is not empty" in err
    assert "--force" not in err  # `kit unpack` has no --force
