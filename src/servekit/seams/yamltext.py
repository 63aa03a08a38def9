"""YAML parsed safely: no anchors or aliases, bounded depth, no duplicate or unhashable keys,
and every failure an error of the caller's class that names the line."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from servekit.errors import Error

if TYPE_CHECKING:  # PyYAML loads with the first YAML file, not here: a command that fails
    # on its arguments starts without it (docs/performance.md)
    import yaml

YamlErrorFactory = Callable[[str, int | None, str], Error]
"""Builds the caller's error from a message, a 1-based line (or None) and a hint."""

MAX_YAML_DEPTH = 64
"""servekit's YAML files nest about 6 levels; PyYAML's composer recurses once per level."""


def safe_loader() -> type[yaml.SafeLoader] | type[yaml.CSafeLoader]:
    """PyYAML's safe loader on libyaml's scanner and parser when PyYAML has them: the same
    events, nodes and values, marks included, about ten times faster (publishing parses
    every package.yaml; every kit build reads its compose file back). libyaml refuses a
    few texts PyYAML's own scanner takes, such as the escape of a lone surrogate."""
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
    for event in yaml.parse(text, Loader=safe_loader()):
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
        node = yaml.compose(text, Loader=safe_loader())
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
