"""A model pin inside a package: write it in (``--package``) and read it back.

Writing (:func:`pin_into_package`):

1. load the package (it must be valid before it is changed);
2. check the pin is of the package's repository and has weight files;
3. write the pin file (``model.files``, default ``model/pin.json``);
4. set ``model.commit``, ``tree_digest``, ``total_bytes``, ``shard_count`` and
   ``files`` in ``package.yaml`` with a round-trip YAML editor, so comments, key
   order, quoting and layout stay as they were; check nothing else changed;
5. load the package again; if anything fails, put both files back as they were.
"""

from __future__ import annotations

import io
from contextlib import suppress
from pathlib import Path
from typing import Any

import yaml
from ruamel.yaml import YAML
from ruamel.yaml.scalarstring import DoubleQuotedScalarString

from servekit.errors import Error, FileChangedError, PackageError, PackageFileError, UsageError
from servekit.package.files import PACKAGE_FILE, PIN_FILE
from servekit.package.load import LoadedPackage, load_package, parse_package
from servekit.package.models import ModelPin
from servekit.seams import ReadFailure, read_utf8
from servekit.weights.models import WeightsPin
from servekit.weights.pinfile import parse_pin, pin_json

_LAYOUTS = ((2, 4, 2), (2, 2, 0), (4, 4, 2), (4, 6, 4), (4, 4, 0), (2, 4, 0))


def _yaml(layout: tuple[int, int, int]) -> YAML:
    editor = YAML()
    editor.preserve_quotes = True
    editor.width = 4096
    editor.indent(mapping=layout[0], sequence=layout[1], offset=layout[2])
    return editor


def _dump(editor: YAML, data: Any) -> str:
    out = io.StringIO()
    editor.dump(data, out)
    return out.getvalue()


def _editor_for(text: str) -> YAML:
    """The editor whose output reproduces ``text`` unchanged (else the common layout)."""
    for layout in _LAYOUTS:
        editor = _yaml(layout)
        if _dump(editor, editor.load(text)) == text:
            return editor
    return _yaml(_LAYOUTS[0])


def _pin_fields(pin: WeightsPin, files: str) -> dict[str, Any]:
    return {
        "commit": DoubleQuotedScalarString(pin.commit or ""),
        "tree_digest": pin.tree_digest,
        "total_bytes": pin.total_bytes,
        "shard_count": pin.shard_count,
        "files": files,
    }


def updated_yaml(text: str, pin: WeightsPin, files: str) -> str:
    """``package.yaml`` text with the model fields of ``pin``; everything else as it was."""
    editor = _editor_for(text)
    data = editor.load(text)
    fields = _pin_fields(pin, files)
    for key, value in fields.items():
        data["model"][key] = value
    new = _dump(editor, data)
    expected = yaml.safe_load(text)
    expected["model"].update({k: str(v) if k == "commit" else v for k, v in fields.items()})
    if yaml.safe_load(new) != expected:
        raise PackageFileError(
            "editing the model fields would change other fields; nothing was written",
            path=PACKAGE_FILE,
            hint="set the model fields by hand from the pin file",
        )
    return new


def _check_pin_fits(loaded: LoadedPackage, pin: WeightsPin) -> None:
    model = loaded.package.model
    if pin.repo != model.repo:
        raise UsageError(
            f"the pin is of {pin.repo or 'a local directory'}, the package serves {model.repo}",
            hint=f"pin {model.repo} (`servekit model pin {model.repo} --revision REF`), "
            "or change model.repo first",
        )
    if pin.shard_count < 1:
        raise UsageError(
            f"{pin.repo}@{pin.commit} has no weight files; a package needs at least one",
            hint="check the repository and revision",
        )


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.servekit-tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _restore(path: Path, old: str | None) -> None:
    with suppress(OSError):
        if old is None:
            path.unlink(missing_ok=True)
        else:
            _write(path, old)


def pin_into_package(pin: WeightsPin, directory: Path) -> Path:
    """Write ``pin`` into the package at ``directory``; return the pin file's path."""
    loaded = load_package(directory)
    _check_pin_fits(loaded, pin)
    relative = loaded.package.model.files or PIN_FILE
    manifest, pin_path = directory / PACKAGE_FILE, directory / relative
    old_yaml = manifest.read_text(encoding="utf-8")
    old_pin = pin_path.read_text(encoding="utf-8") if pin_path.is_file() else None
    new_yaml = updated_yaml(old_yaml, pin, relative)
    parse_package(manifest, new_yaml)
    try:
        _write(pin_path, pin_json(pin))
        _write(manifest, new_yaml)
        load_package(directory)
    except (Error, OSError):
        _restore(pin_path, old_pin)
        _restore(manifest, old_yaml)
        raise
    return pin_path


def check_pin_agrees(model: ModelPin, pin: WeightsPin, pin_file: str) -> None:
    """Raise unless ``pin`` and the package's ``model`` section name the same tree.

    Tree digest, total bytes and shard count must be equal. Repository and commit must be
    equal when the pin names them; a pin of a local directory (``servekit model digest``)
    names neither, and is held to the tree alone, as ``servekit verify kit`` holds it.
    """
    recorded = {
        "repo": model.repo,
        "commit": model.commit,
        "tree_digest": model.tree_digest,
        "total_bytes": str(model.total_bytes),
        "shard_count": str(model.shard_count),
    }
    for field, value in recorded.items():
        named = getattr(pin, field)
        if named is None and field in ("repo", "commit"):
            continue
        if str(named) != value:
            raise FileChangedError(
                f"{pin_file} disagrees with package.yaml on model.{field}",
                file=pin_file,
                expected=value,
                actual=str(named),
                hint="run `servekit model pin REPO --revision REF --package DIR` again",
            )


def _unreadable_pin(failure: ReadFailure) -> PackageError:
    return PackageError(
        f"{failure.path}: cannot read the pin file model.files names: {failure.exc}",
        hint="restore the pin file, or pin again with `servekit model pin`",
    )


def package_pin_of(model: ModelPin, text: str, source: str) -> WeightsPin:
    """The pin file of a package (read from its directory or from a kit), checked against
    its ``model`` section: the one rule ``verify weights --package`` and ``--kit`` share."""
    try:
        pin = parse_pin(text, source=source)
    except UsageError as exc:  # in a package, a bad pin file is a package problem
        raise PackageError(exc.message, hint=exc.hint) from exc
    check_pin_agrees(model, pin, source)
    return pin


def package_pin(directory: Path) -> tuple[LoadedPackage, WeightsPin | None]:
    """The package at ``directory`` and its pin file (``None`` when it names none),
    checked by :func:`package_pin_of`."""
    loaded = load_package(directory)
    model = loaded.package.model
    if model.files is None:
        return loaded, None
    path = loaded.path(model.files)
    text = read_utf8(path, _unreadable_pin)
    return loaded, package_pin_of(model, text, str(path))
