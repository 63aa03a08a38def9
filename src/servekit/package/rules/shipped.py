"""The serve command a package ships, against the one a run recorded, flag for flag.

Both sides are read the same way: the program words (``vllm serve``), the model, the
flags as an argument parser reads them (names normalised, ``--f=v`` as ``--f v``, the
last of a repeated flag wins, so order does not matter: every listed engine parses its
command line with argparse), and the environment (``NAME=value`` words in the argument
vector included). What the kit sets for the deployer and cannot have been the run's is
left out of the comparison: the listen address and port, the served name, credentials and
download paths (:data:`PLACEMENT`), and the revision pin when it names the pinned commit.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass

from servekit.package.evidence import ServeConfig
from servekit.package.models import Package
from servekit.package.rules.engines import ENV_WORD, NEUTRAL_ENV, argv_words, flags

PLACEMENT = frozenset({"--host", "--port", "--api-key", "--download-dir", "--served-model-name"})
"""Flags that place or name a server, not configure it: a run's own values are not the
kit's (the served name is read by SK124, against the header's model and served models;
``bench run --serve-config package.yaml`` records the command without it)."""
REVISION_FLAGS = frozenset({"--revision", "--code-revision", "--tokenizer-revision"})
MODEL_FLAGS = ("--model", "--model-path")


@dataclass(frozen=True)
class Command:
    """A serve command as the comparison reads it."""

    program: tuple[str, ...]
    model: str | None
    flags: dict[str, str | None]
    env: dict[str, str]


def _walk(argv: tuple[str, ...]) -> tuple[list[str], dict[str, str]]:
    """Positional words and ``NAME=value`` words of an argument vector, read as
    :func:`~servekit.package.rules.engines.flags` reads it (a flag's value is neither)."""
    words, positional, env = argv_words(argv), list[str](), dict[str, str]()
    i = 0
    while i < len(words):
        word = words[i]
        if word.startswith("-") and word not in ("-", "--"):
            following = words[i + 1] if i + 1 < len(words) else ""
            takes = "=" not in word and following and not following.startswith("-")
            i += 2 if takes else 1
            continue
        if ENV_WORD.match(word):
            name, _, value = word.partition("=")
            env[name] = value
        elif not (word == "env" and not positional):
            positional.append(word)
        i += 1
    return positional, env


def _parse(
    argv: tuple[str, ...], env: dict[str, str], model_flag: str | None, program_words: int
) -> Command:
    positional, inline = _walk(argv)
    named = dict(flags(argv))
    model = next((named.pop(f) for f in (model_flag, *MODEL_FLAGS) if f and f in named), None)
    program = positional[:program_words]
    rest = positional[program_words:]
    if model is None and rest:
        model, rest = rest[0], rest[1:]
    if program:
        program[0] = posixpath.basename(program[0])
    return Command((*program, *rest), model, named, {**env, **inline})


def declared(pkg: Package) -> Command:
    """The command every deploy file runs (what kit/command.py renders from ``serve``)."""
    serve = pkg.serve
    named = dict(flags(serve.args))
    model = serve.model_dir or pkg.model.repo
    env = {e.name: e.value for e in serve.env}
    return Command(tuple(serve.entrypoint), model, named, env)


def recorded(pkg: Package, serve: ServeConfig) -> Command:
    entry = pkg.serve.entrypoint
    return _parse(serve.argv, dict(serve.env), pkg.serve.model_arg, len(entry))


def _local(model: str) -> bool:
    return model.startswith(("/", "./", "../", "~"))


def _model_differs(pkg: Package, model: str | None) -> bool:
    """The recorded model is the pinned repository (``REPO@COMMIT`` too), or a directory on
    the serving host: a download of the pin, or the converted weights ``model_dir`` names
    (the operator's copy may live anywhere). Another repository is other weights."""
    if model is None or _local(model):
        return False
    return model not in (pkg.model.repo, f"{pkg.model.repo}@{pkg.model.commit}")


def _comparable(pkg: Package, named: dict[str, str | None]) -> dict[str, str | None]:
    return {
        name: value
        for name, value in named.items()
        if name not in PLACEMENT and not (name in REVISION_FLAGS and value == pkg.model.commit)
    }


def differences(pkg: Package, serve: ServeConfig) -> list[str]:
    """Every way the recorded ``serve`` departs from the package's, each naming its flag."""
    want, got = declared(pkg), recorded(pkg, serve)
    out = []
    if got.program != want.program:
        out.append(f"program {' '.join(got.program)!r} (ships {' '.join(want.program)!r})")
    if _model_differs(pkg, got.model):
        out.append(f"model {got.model!r} (ships {want.model!r})")
    a, b = _comparable(pkg, want.flags), _comparable(pkg, got.flags)
    for name in sorted(a.keys() | b.keys()):
        if name not in b:
            out.append(f"flag {name} missing (ships {_shown(a[name])})")
        elif name not in a:
            out.append(f"flag {name} {_shown(b[name])} (not shipped)")
        elif a[name] != b[name]:
            out.append(f"flag {name} {_shown(b[name])} (ships {_shown(a[name])})")
    ea = {k: v for k, v in want.env.items() if k not in NEUTRAL_ENV}
    eb = {k: v for k, v in got.env.items() if k not in NEUTRAL_ENV}
    for name in sorted(ea.keys() | eb.keys()):
        if ea.get(name) != eb.get(name):
            out.append(
                f"environment {name}={eb.get(name, '(unset)')} (ships {ea.get(name, '(unset)')})"
            )
    return out


def _shown(value: str | None) -> str:
    return "(set)" if value is None else repr(value)
