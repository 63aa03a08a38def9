"""Plain command-line values converted without pydantic, so `--help` and argument errors
start fast.

typer 0.29 converts every parameter's value through a pydantic ``TypeAdapter``, built the
first time the parameter is processed, even for a flag left unset or an argument left
out; importing pydantic and building the adapter is most of the start-up of a
`servekit GROUP --help` (docs/performance.md). Here a bool, str, int, float or Path
parameter without a parser or path checks gets a converter that handles the plain case
itself (a bool, a string, a whole number or a decimal within the parameter's bounds) and
hands every other value to typer's own adapter, so a refusal still reads exactly as
typer words it.

This relies on typer's internals (``_TyperParameter.get_runtime_param`` and
``RuntimeParam``); :func:`install` does nothing when they are not there, and
tests/cli/test_startup.py fails if it stops taking effect.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, get_args, get_origin

_INT = re.compile(r"[+-]?\d+")


class _NotPlainError(Exception):
    """The value needs typer's own conversion (and, if it is wrong, typer's message)."""


def _bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    raise _NotPlainError


def _str(value: Any) -> str:
    if isinstance(value, str):
        return value
    raise _NotPlainError


def _path(value: Any) -> Path:
    if isinstance(value, Path):
        return value
    if isinstance(value, str):
        return Path(value)
    raise _NotPlainError


def _bounded(number: float, info: Any) -> None:
    if info.clamp or (info.min is not None and number < info.min):
        raise _NotPlainError
    if info.max is not None and number > info.max:
        raise _NotPlainError


def _int(info: Any) -> Callable[[Any], int]:
    def convert(value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise _NotPlainError
        if isinstance(value, str) and not _INT.fullmatch(value):
            raise _NotPlainError
        number = int(value)
        _bounded(number, info)
        return number

    return convert


def _float(info: Any) -> Callable[[Any], float]:
    def convert(value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, int | float | str):
            raise _NotPlainError
        try:
            number = float(value)
        except ValueError:
            raise _NotPlainError from None
        if not math.isfinite(number):
            raise _NotPlainError
        _bounded(number, info)
        return number

    return convert


def _plain_path(info: Any) -> bool:
    return (
        info.path_type is None
        and not (info.exists or info.resolve_path or info.writable or info.allow_dash)
        and info.file_okay is not False
        and info.dir_okay is not False
        and info.readable is not False
    )


def _list(item: Callable[[Any], Any]) -> Callable[[Any], list[Any]]:
    def convert(value: Any) -> list[Any]:
        if not isinstance(value, list | tuple):
            raise _NotPlainError
        return [item(v) for v in value]

    return convert


def converter(descriptor: Any) -> Callable[[Any], Any] | None:
    """The fast converter for a parameter's type descriptor, or None (typer's own)."""
    info = descriptor.parameter_info
    if info.parser is not None or descriptor.file_annotation is not None:
        return None
    return _converter(descriptor.annotation, info)


def _converter(annotation: Any, info: Any) -> Callable[[Any], Any] | None:
    if get_origin(annotation) is list:  # `PATH...`: each item on its own
        args = get_args(annotation)
        item = _converter(args[0], info) if len(args) == 1 else None
        return _list(item) if item is not None else None
    if annotation is bool:
        return _bool
    if annotation is str:
        return _str
    if annotation is int:
        return _int(info)
    if annotation is float:
        return _float(info)
    if annotation is Path and _plain_path(info):
        return _path
    return None


def install() -> None:
    """Give typer's parameters the fast converters (once per process)."""
    try:
        from typer._coercion import RuntimeParam, build_runtime_param
        from typer.core import _TyperParameter
    except ImportError:  # pragma: no cover - another typer: its own conversion stays
        return
    if getattr(_TyperParameter, "_servekit_fast", False):
        return

    @dataclass(frozen=True)
    class Fast(RuntimeParam):
        convert: Callable[[Any], Any]
        descriptor: Any

        def _coerce_value(self, value: Any, param: Any, ctx: Any) -> Any:
            try:
                return self.convert(value)
            except _NotPlainError:
                slow = build_runtime_param(self.descriptor)
                return slow._coerce_value(value, param=param, ctx=ctx)

    def get_runtime_param(self: Any) -> Any:
        if self._runtime_param is None:
            descriptor = self.type_descriptor
            convert = converter(descriptor)
            self._runtime_param = (
                build_runtime_param(descriptor)
                if convert is None
                else Fast(
                    parameter_info=descriptor.parameter_info,
                    annotation=descriptor.annotation,
                    convert=convert,
                    descriptor=descriptor,
                )
            )
        return self._runtime_param

    _TyperParameter.get_runtime_param = get_runtime_param  # type: ignore[method-assign]
    _TyperParameter._servekit_fast = True  # type: ignore[attr-defined]
