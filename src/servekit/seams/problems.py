"""pydantic's ``ValidationError`` in servekit's words: each problem names the option or field
the user wrote (``--output-tokens must be at least 1 (got 0)``), never a bare pydantic message."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pydantic loads with the first model, not here (docs/performance.md)
    from pydantic import ValidationError

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
