"""Where foreign libraries meet servekit: their exceptions become servekit errors here.

One helper per foreign library, so a message reads the same wherever it is raised:

* :func:`validation_problems` turns a pydantic ``ValidationError`` into sentences that
  name the option or field (``--output-tokens must be at least 1 (got 0)``), never a
  bare pydantic message;
* :func:`read_text` and :func:`write_text` turn ``OSError`` and ``UnicodeDecodeError``
  into the caller's error class, naming the file;
* :func:`parse_url` checks an endpoint URL (scheme, host, port range) before anything
  connects to it.
"""

from __future__ import annotations

import contextlib
import math
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from servekit.errors import Error, UsageError

if TYPE_CHECKING:  # PyYAML and pydantic load with the first YAML file or model, not here:
    # a command that fails on its arguments starts without them (docs/performance.md)
    import yaml
    from pydantic import ValidationError

ErrorFactory = Callable[[str], Error]
"""Builds the caller's error from a message (the caller knows which class it owes)."""

_BOUNDS = {
    "greater_than_equal": ("ge", "must be at least {}"),
    "greater_than": ("gt", "must be greater than {}"),
    "less_than_equal": ("le", "must be at most {}"),
    "less_than": ("lt", "must be less than {}"),
    "too_short": ("min_length", "must hold at least {} item(s)"),
    "too_long": ("max_length", "must hold at most {} item(s)"),
    "string_too_short": ("min_length", "must be at least {} character(s) long"),
    "string_too_long": ("max_length", "must be at most {} character(s) long"),
}


def _sentence(err: Mapping[str, Any]) -> str:
    kind = str(err.get("type", ""))
    ctx = err.get("ctx") or {}
    if kind in _BOUNDS:
        key, template = _BOUNDS[kind]
        if key in ctx:
            return template.format(ctx[key])
    if kind == "missing":
        return "is required"
    if kind == "extra_forbidden":
        return "is an unknown field (remove it, or check its spelling against the schema)"
    if kind == "string_type" and isinstance(err.get("input"), int | float):
        return "must be text, not a number or boolean: quote the value"
    if kind == "value_error":  # a validator's own sentence, without pydantic's prefix
        return str(err.get("msg", "")).removeprefix("Value error, ")
    message = str(err.get("msg", "is not valid"))
    if message.startswith("Input should be "):
        return "must be " + message.removeprefix("Input should be ")
    return message[:1].lower() + message[1:]


def _got(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _path(loc: Sequence[int | str], start: str = "") -> str:
    """``serve.args[2]``: dotted names, list indexes in brackets, after ``start``."""
    out = start
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


@dataclass(frozen=True)
class FieldProblem:
    """One problem of a pydantic ``ValidationError``, in servekit's words.

    ``loc`` is the field's location (validator wrappers removed), ``field`` what the user
    calls it (``--output-tokens``, ``SERVEKIT_PORT`` or ``model.files[0].sha256``; empty at
    the top level) and ``sentence`` the rest: ``must be at least 1 (got 0)``.
    """

    loc: tuple[int | str, ...]
    field: str
    sentence: str
    own_sentence: bool  # a validator wrote it: it names what it checks itself

    def __str__(self) -> str:
        if self.own_sentence or not self.field:
            return self.sentence
        return f"{self.field} {self.sentence}"


def field_problems(
    exc: ValidationError, names: Mapping[str, str] | None = None
) -> list[FieldProblem]:
    """Every problem of ``exc``; ``names`` maps a top-level field to what the user typed
    (``output_tokens`` -> ``--output-tokens``), others are named by their path."""
    names = names or {}
    out = []
    for err in exc.errors():
        loc = tuple(p for p in err.get("loc", ()) if not str(p).startswith("function-"))
        renamed = bool(loc) and str(loc[0]) in names
        field = _path(loc[1:], names[str(loc[0])]) if renamed else _path(loc)
        kind = err.get("type")
        sentence = _sentence(err)
        if kind not in {"missing", "value_error", "extra_forbidden"}:
            sentence += f" (got {_got(err.get('input'))})"
        out.append(FieldProblem(loc, field, sentence, own_sentence=kind == "value_error"))
    return out


def validation_problems(exc: ValidationError, names: Mapping[str, str] | None = None) -> str:
    """Every problem of ``exc`` as ``NAME SENTENCE (got VALUE)``, joined by ``; ``."""
    return "; ".join(str(p) for p in field_problems(exc, names))


def problem_text(exc: BaseException) -> str:
    """One line saying what is wrong with parsed input, whichever library refused it: a
    pydantic ``ValidationError`` through :func:`validation_problems`, anything else
    (``json`` or ``base64`` errors, a missing key) by its first line."""
    from pydantic import ValidationError  # here: the seam loads pydantic only when used

    if isinstance(exc, ValidationError):
        return validation_problems(exc)
    text = str(exc).splitlines()[0] if str(exc) else ""
    return text or type(exc).__name__


def option_names(model_fields: Mapping[str, object], **renamed: str) -> dict[str, str]:
    """``field -> --field-name`` for every field, with ``renamed`` taking precedence."""
    names = {field: "--" + field.replace("_", "-") for field in model_fields}
    names.update(renamed)
    return names


def read_text(path: Path, error: ErrorFactory) -> str:
    """The UTF-8 text of ``path``; any failure to read it becomes ``error(message)``."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise error(f"{path}: no such file") from exc
    except IsADirectoryError as exc:
        raise error(f"{path}: is a directory, not a file") from exc
    except UnicodeDecodeError as exc:
        raise error(f"{path}: not UTF-8 text (byte {exc.start})") from exc
    except OSError as exc:
        raise error(f"{path}: cannot read ({exc.strerror or exc})") from exc


def write_text(path: Path, text: str, error: ErrorFactory) -> None:
    """Write ``text`` to ``path``; a missing parent or an OS refusal becomes ``error``."""
    try:
        path.write_text(text, encoding="utf-8")
    except FileNotFoundError as exc:
        raise error(f"{path}: its directory {path.parent} does not exist") from exc
    except OSError as exc:
        raise error(f"{path}: cannot write ({exc.strerror or exc})") from exc


def parse_url(text: str, option: str = "--endpoint") -> str:
    """``text`` as an http(s) base URL without a trailing slash, or a :class:`UsageError`."""
    hint = "give a base URL such as http://127.0.0.1:8000"
    if any(ord(c) < 0x21 or ord(c) == 0x7F for c in text):
        raise UsageError(f"{option} contains spaces or control characters", hint=hint)
    try:
        parts = urllib.parse.urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise UsageError(f"{option} {text!r} is not a valid URL: {exc}", hint=hint) from exc
    if parts.scheme not in {"http", "https"}:
        raise UsageError(f"{option} {text!r} is not an http(s) URL", hint=hint)
    if not parts.hostname:
        raise UsageError(f"{option} {text!r} names no host", hint=hint)
    if port == 0:
        raise UsageError(f"{option} {text!r}: port must be 1-65535", hint=hint)
    return text.rstrip("/")


def strict_json(value: Any) -> Any:
    """``value`` with every non-finite float replaced by ``None`` (JSON has no NaN)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): strict_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [strict_json(v) for v in value]
    return value


@contextlib.contextmanager
def output_dir(
    path: Path, *, force: bool | None, option: str = "--out", mode: int = 0o777
) -> Iterator[Path]:
    """The one overwrite rule for a command that writes a directory.

    Refuses a path that is a file, a directory whose parent does not exist (servekit
    creates no parent the user did not ask for), and a non-empty directory without
    ``--force`` (``force=None``: the command has no ``--force``, and its hint says none). Creates ``path`` when absent and removes it again, if still empty, when
    the command fails, so a failed command leaves no empty output directory behind.
    """
    if path.exists() and not path.is_dir():
        raise UsageError(f"{option} {path} is a file, not a directory", hint="name a directory")
    if not path.exists() and not path.parent.is_dir():
        raise UsageError(
            f"{option} {path}: its parent {path.parent} does not exist",
            hint=f"create {path.parent} first (servekit creates no parent directories)",
        )
    if path.is_dir() and any(path.iterdir()) and not force:
        overwrite = ", or pass --force to overwrite what is there" if force is False else ""
        raise UsageError(
            f"{option} {path} is not empty", hint=f"choose an empty or new directory{overwrite}"
        )
    created = not path.exists()
    try:
        path.mkdir(mode=mode, exist_ok=True)  # ``mode``, less the umask, when created
    except OSError as exc:
        raise UsageError(f"{option} {path}: cannot create ({exc.strerror or exc})") from exc
    try:
        yield path
    except BaseException:
        if created and path.is_dir() and not any(path.iterdir()):
            path.rmdir()
        raise


def output_file(path: Path, *, force: bool, option: str = "--out") -> Path:
    """The same rule for a single file: no overwrite without ``--force``, no new parents."""
    if path.is_dir():
        raise UsageError(f"{option} {path} is a directory, not a file", hint="name a file")
    if not path.parent.is_dir():
        raise UsageError(
            f"{option} {path}: its directory {path.parent} does not exist",
            hint=f"create {path.parent} first (servekit creates no parent directories)",
        )
    if path.exists() and not path.is_file():
        raise UsageError(f"{option} {path} is not a regular file", hint="name a new file")
    if path.exists() and not force:
        raise UsageError(f"{option} {path} exists", hint="pass --force to overwrite it")
    return path


YamlErrorFactory = Callable[[str, int | None, str], Error]
"""Builds the caller's error from a message, a 1-based line (or None) and a hint."""

MAX_YAML_DEPTH = 64
"""servekit's YAML files nest about 6 levels; PyYAML's composer recurses once per level."""


def _yaml_loader() -> type[yaml.SafeLoader] | type[yaml.CSafeLoader]:
    """libyaml's scanner and parser when PyYAML has them: the same events and nodes, marks
    included, about ten times faster (publishing parses every package.yaml)."""
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _event_line(event: yaml.Event) -> int | None:
    return event.start_mark.line + 1 if event.start_mark else None


def _no_aliases(text: str, error: YamlErrorFactory) -> None:
    """Refuse anchors, aliases and deep nesting from the event stream, before composing
    (aliases let a few hundred bytes expand to gigabytes; nothing servekit reads needs them).
    """
    import yaml

    depth = 0
    for event in yaml.parse(text, Loader=_yaml_loader()):
        anchor = getattr(event, "anchor", None)
        if isinstance(event, yaml.AliasEvent) or anchor is not None:
            kind = "alias" if isinstance(event, yaml.AliasEvent) else "anchor"
            hint = "write the value out in full: no anchors (&) or aliases (*) are allowed"
            raise error(f"YAML {kind} '{anchor}' is not allowed", _event_line(event), hint)
        depth += isinstance(event, yaml.CollectionStartEvent) - isinstance(
            event, yaml.CollectionEndEvent
        )
        if depth > MAX_YAML_DEPTH:
            raise _too_deep(error, _event_line(event))


def _too_deep(error: YamlErrorFactory, line: int | None) -> Error:
    hint = f"servekit's files never need more than {MAX_YAML_DEPTH} levels"
    return error("the YAML is nested too deeply", line, hint)


def _walk(root: yaml.Node) -> Iterator[yaml.Node]:
    """Every node once, without recursion."""
    import yaml

    pending, seen = [root], set()
    while pending:
        node = pending.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        yield node
        if isinstance(node, yaml.MappingNode):
            pending.extend(part for pair in node.value for part in pair)
        elif isinstance(node, yaml.SequenceNode):
            pending.extend(node.value)


def _check_keys(root: yaml.Node, error: YamlErrorFactory) -> None:
    """Refuse a key twice in one mapping (YAML keeps the last) and keys that are
    mappings or lists (not hashable, and never meant)."""
    import yaml

    for node in _walk(root):
        if not isinstance(node, yaml.MappingNode):
            continue
        seen: set[str] = set()
        for key, _ in node.value:
            line = key.start_mark.line + 1
            if not isinstance(key, yaml.ScalarNode):
                raise error("a key is a list or mapping", line, "keys are plain names")
            if key.value in seen:
                hint = "each key may appear once per mapping; remove one"
                raise error(f"duplicate key '{key.value}'", line, hint)
            seen.add(key.value)


def _bad_value_line(root: yaml.Node) -> int | None:
    """The line of the first scalar PyYAML cannot construct (an impossible date, a tag)."""
    import yaml

    for node in _walk(root):
        if isinstance(node, yaml.ScalarNode):
            try:
                yaml.SafeLoader("").construct_object(node)
            except (yaml.YAMLError, ValueError, TypeError, OverflowError):
                return node.start_mark.line + 1
    return None


def parse_yaml(text: str, error: YamlErrorFactory) -> tuple[Any, yaml.Node | None]:
    """Parse YAML ``text`` safely: ``(data, root node)``, the node for line lookups.

    Every failure (syntax, anchors, depth, duplicate or unhashable keys, a value such as
    ``2026-13-45`` that cannot be constructed, an unknown tag) becomes
    ``error(message, line, hint)``.
    """
    import yaml

    try:
        _no_aliases(text, error)
        node = yaml.compose(text, Loader=_yaml_loader())
    except yaml.MarkedYAMLError as exc:
        line = exc.problem_mark.line + 1 if exc.problem_mark else None
        if "maximum nesting depth" in (exc.problem or ""):  # libyaml's own limit, read ahead
            raise _too_deep(error, line) from exc
        raise error(
            f"not valid YAML: {exc.problem}", line, "check indentation and quoting on that line"
        ) from exc
    except yaml.YAMLError as exc:  # e.g. a NUL or other non-printable character
        raise error(f"not valid YAML: {exc}", None, "remove control characters") from exc
    if node is None:
        return None, None
    _check_keys(node, error)
    try:
        return yaml.SafeLoader("").construct_document(node), node
    except (yaml.YAMLError, ValueError, TypeError, OverflowError) as exc:
        problem = getattr(exc, "problem", None) or str(exc)
        hint = "quote the value to keep it as text, or correct it (dates are YYYY-MM-DD)"
        raise error(f"a value cannot be read: {problem}", _bad_value_line(node), hint) from exc
