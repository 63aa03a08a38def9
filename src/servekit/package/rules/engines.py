"""Documented per-engine lists the rules read (docs/rules.md prints them), each taken from
the engine's module in :mod:`servekit.engines`.

* :data:`LOAD_FLAGS`: flags a *stock* serve command may carry: they are needed to load
  the model on the hardware, or only name things (port, served name), and change no
  serving behaviour the engine would otherwise default to;
* :data:`NEUTRAL_ENV`: environment variables a stock run may set (paths, credentials,
  device selection);
* :data:`NUMERICS_FLAGS`: flags that change numerics at runtime, with the values that do
  not (``None``: every value does);
* :data:`PREALLOCATING` and :data:`PREALLOCATING_FLAGS`: engines (or an engine's flags)
  that reserve most of the GPU's memory up front, so no memory reading of them measures
  the model.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from typing import Final

from servekit.engines import ENGINES, OTHER_PREALLOCATING
from servekit.engines import engine_key as engine_key  # the rules' spelling of engine names
from servekit.package.evidence import ServeConfig

LOAD_FLAGS: Final[dict[str, frozenset[str]]] = {
    name: spec.load_flags for name, spec in ENGINES.items()
}

NEUTRAL_ENV: Final = frozenset(
    {"CUDA_VISIBLE_DEVICES", "HF_HOME", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "HF_HUB_OFFLINE",
     "HF_HUB_CACHE", "TRANSFORMERS_OFFLINE", "TRANSFORMERS_CACHE", "NCCL_DEBUG", "PATH",
     "HOME", "TMPDIR",
     # the simulator's host-noise draw (servekit tune seeds one per engine start): a
     # property of the simulated host, like another machine, not of the served configuration
     "SERVEKIT_SIM_NOISE_SEED"}
)  # fmt: skip

NAMING_FLAGS: Final = frozenset(
    {"--host", "--port", "--served-model-name", "--api-key", "--download-dir",
     "--uvicorn-log-level", "--disable-log-requests", "--disable-log-stats"}
)  # fmt: skip
"""Load-needed flags that only name or place things: a stock baseline may set them to
values of its own; every other load-needed flag it sets must have the optimized run's value."""

# flag -> values that leave numerics alone (None: any use changes them). A flag that reads
# a whole configuration file (--config) cannot be shown harmless, so any use counts.
NUMERICS_FLAGS: Final[dict[str, dict[str, frozenset[str] | None]]] = {
    name: dict(spec.numerics_flags) for name, spec in ENGINES.items()
}
LOSSLESS_SPECULATION: Final = ("rejection_sampler",)
"""A speculative configuration whose acceptance method is one of these keeps outputs exact."""

PREALLOCATING: Final = OTHER_PREALLOCATING | {n for n, e in ENGINES.items() if e.preallocates}
PREALLOCATING_FLAGS: Final[dict[str, frozenset[str]]] = {
    name: spec.preallocating_flags for name, spec in ENGINES.items() if spec.preallocating_flags
}

ANSWERS_VERSION: Final = frozenset({"vllm", "servekit-sim"})
"""Engines that answer ``GET /version``: a ``bench run`` file of one must record the engine's
name and version (SK136); for any other engine a null one is listed as cannot verify."""

ENV_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
"""A word that sets an environment variable (``NAME=value``) before the program in an argv."""


def argv_words(argv: tuple[str, ...]) -> list[str]:
    """Shell words of an argument vector: a word that holds whitespace (the command of
    ``sh -c '...'``, or ``--flag value`` recorded as one word) is split into its words,
    unless it is a JSON value (``--speculative-config '{...}'``)."""
    out: list[str] = []
    for word in argv:
        if not any(c.isspace() for c in word) or _is_json(word):
            out.append(word)
            continue
        try:
            out += shlex.split(word)
        except ValueError:
            out += word.split()
    return out


def _is_json(word: str) -> bool:
    try:
        json.loads(word)
    except ValueError:
        return False
    return True


def _flag_name(word: str) -> str:
    """``--KV_Cache_Dtype`` -> ``--kv-cache-dtype``: the engines' parsers accept ``_`` for ``-``
    (vLLM's FlexibleArgumentParser), so a spelling is no way around a list."""
    return word.lower().replace("_", "-") if word.startswith("--") else word


def flags(argv: tuple[str, ...]) -> Iterator[tuple[str, str | None]]:
    """(flag, value) pairs of an argument vector: ``--f v``, ``--f=v``, or a bare ``--f``;
    flag names normalised (:func:`_flag_name`), whitespace-holding words split (:func:`argv_words`)."""
    words = argv_words(argv)
    for i, word in enumerate(words):
        if not word.startswith("-") or word in ("-", "--"):
            continue
        name, eq, value = word.partition("=")
        if eq:
            yield _flag_name(name), value
        else:
            following = words[i + 1] if i + 1 < len(words) else None
            yield (
                _flag_name(name),
                following if following and not following.startswith("-") else None,
            )


def argv_env(argv: tuple[str, ...]) -> list[str]:
    """Environment set inside the argument vector (``env NAME=1 vllm serve``): a ``NAME=value``
    word that is not the value of a preceding flag."""
    words = argv_words(argv)
    out = []
    for i, word in enumerate(words):
        previous = words[i - 1] if i else ""
        is_value = previous.startswith("-") and "=" not in previous
        if ENV_WORD.match(word) and not is_value:
            out.append(word.partition("=")[0])
    return out


def _listed(name: str, listed: dict[str, frozenset[str] | None]) -> str | None:
    """The listed flag ``name`` stands for: itself, an argparse abbreviation of it
    (``--kv-cache-dt``), or one of its dotted sub-options (``--speculative-config.method``)."""
    if name in listed:
        return name
    for flag in listed:
        dotted = name.startswith(flag + ".")
        abbreviated = name.startswith("--") and len(name) > 3 and flag.startswith(name)
        if dotted or abbreviated:
            return flag
    return None


def preallocates(engine: str, argv: tuple[str, ...]) -> bool:
    """Whether ``engine`` run with ``argv`` reserves most GPU memory up front."""
    name = engine_key(engine)
    flagged = PREALLOCATING_FLAGS.get(name, frozenset())
    return name in PREALLOCATING or any(flag in flagged for flag, _ in flags(argv))


def not_stock(engine: str, serve: ServeConfig) -> list[str]:
    """What makes ``serve`` more than the engine's defaults plus load-needed settings."""
    allowed = LOAD_FLAGS.get(engine_key(engine))
    if allowed is None:
        return [f"no documented list of load-needed flags for engine '{engine}'"]
    out = [f"flag {name}" for name, _ in flags(serve.argv) if name not in allowed]
    env = [*serve.env, *argv_env(serve.argv)]
    neutral = NEUTRAL_ENV | ENGINES[engine_key(engine)].neutral_env
    return out + [f"environment {name}" for name in env if name not in neutral]


def served_model_arg(argv: tuple[str, ...]) -> str | None:
    """The model a serve command loads: ``--model``/``--model-path``, else the word after
    ``serve`` (``vllm serve MODEL``); None when it names none."""
    named = dict(flags(argv))
    for flag in ("--model", "--model-path"):
        if named.get(flag):
            return named[flag]
    words = argv_words(argv)
    if "serve" in words:
        following = words[words.index("serve") + 1 :]
        if following and not following[0].startswith("-"):
            return following[0]
    return None


def load_settings(argv: tuple[str, ...]) -> dict[str, str | None]:
    """The load-needed settings of ``argv`` that change what is served (naming flags left out)."""
    return {name: value for name, value in flags(argv) if name not in NAMING_FLAGS}


def numerics_changes(engine: str, argv: tuple[str, ...]) -> list[str]:
    """Flags in ``argv`` that change numerics at runtime for ``engine`` (an engine with no
    documented list cannot be shown to keep them)."""
    listed = NUMERICS_FLAGS.get(engine_key(engine))
    if listed is None:
        return [f"no documented list of numerics-changing flags for engine '{engine}'"]
    out = []
    for word, value in flags(argv):
        name = _listed(word, listed)
        if name is None:
            continue
        harmless = listed[name]
        if name in ("--speculative-config", "--speculative-algorithm"):
            if not _lossless_speculation(value):
                out.append(f"{word} {value or ''}".strip())
        elif harmless is None or (value or "") not in harmless:
            out.append(f"{word} {value or ''}".strip())
    return out + numerics_env(argv)


_LOSSY_DTYPE = re.compile(r"^(fp8|fp6|fp4|int8|int4|nf4|mxfp|nvfp|e4m3|e5m2|w8a8|w4a16|awq|gptq)",
                          re.IGNORECASE)  # fmt: skip
_NUMERICS_ENV_NAME = re.compile(r"KV_CACHE_DTYPE|QUANTIZ|_DTYPE$", re.IGNORECASE)


def numerics_env(argv: tuple[str, ...]) -> list[str]:
    """``NAME=value`` words that set numerics through the environment instead of a flag: a
    name about KV-cache dtype, quantization or dtype with a value other than ``auto``, or
    any variable set to a lossy dtype (``fp8``, ``int4``...). A kernel choice
    (``VLLM_ATTENTION_BACKEND=FLASHINFER``) is not read as one."""
    out = []
    for word in argv_words(argv):
        if not ENV_WORD.match(word):
            continue
        name, _, value = word.partition("=")
        named = _NUMERICS_ENV_NAME.search(name) and value.lower() not in ("", "auto")
        if named or _LOSSY_DTYPE.match(value.strip()):
            out.append(word)
    return out


def _lossless_speculation(value: str | None) -> bool:
    """Only a JSON speculative configuration whose ``acceptance_method`` is exact."""
    try:
        config = json.loads(value or "")
    except ValueError:
        return False
    return isinstance(config, dict) and config.get("acceptance_method") in LOSSLESS_SPECULATION
