"""Deterministic prompts of a requested token length, each with a unique prefix.

Two ways to size a prompt:

* **words** (default, needs nothing installed): common short English words, which
  most tokenizers count as about one token each. The exact ratio is calibrated against
  the server (its ``/tokenize``, else the ``usage.prompt_tokens`` of two probe
  requests) as a line ``server tokens = intercept + slope * words``.
* **tokenizer** (``--tokenizer PATH``, needs the ``tokenizers`` package): the text is
  cut at token boundaries of the model's own tokenizer; the same calibration then
  measures the chat template and prefix overhead.

Every prompt starts with its request id, so no request shares a prefix with another
(no prefix-cache hits between requests, runs or warmups). The text after the id is a
slice of one seeded word pool at a request-specific offset.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from servekit.errors import UsageError

VOCAB = [
    "the",
    "of",
    "and",
    "to",
    "in",
    "is",
    "was",
    "for",
    "on",
    "that",
    "with",
    "as",
    "by",
    "at",
    "from",
    "his",
    "her",
    "it",
    "an",
    "are",
    "were",
    "be",
    "this",
    "which",
    "or",
    "had",
    "not",
    "but",
    "one",
    "all",
    "they",
    "their",
    "new",
    "has",
    "more",
    "been",
    "two",
    "first",
    "who",
    "its",
    "out",
    "up",
    "than",
    "other",
    "into",
    "time",
    "over",
    "also",
    "some",
    "can",
    "only",
    "after",
    "such",
    "most",
    "may",
    "city",
    "year",
    "when",
    "three",
    "state",
    "made",
    "part",
    "used",
    "many",
    "about",
    "would",
    "him",
    "these",
    "well",
    "then",
    "school",
    "world",
    "between",
    "both",
    "where",
    "later",
    "life",
    "called",
    "under",
    "four",
    "during",
    "high",
    "including",
    "early",
    "name",
    "known",
    "small",
    "team",
    "area",
    "before",
    "while",
    "through",
    "long",
    "house",
    "back",
    "same",
    "since",
    "each",
    "five",
    "great",
    "set",
    "work",
    "number",
    "group",
    "much",
    "found",
    "three",
    "line",
    "west",
    "game",
    "best",
    "war",
    "own",
    "south",
    "north",
    "east",
    "main",
    "old",
    "few",
    "family",
    "end",
    "local",
    "road",
    "based",
    "being",
    "because",
    "last",
    "water",
    "light",
    "river",
    "stone",
    "cloud",
    "paper",
    "garden",
    "window",
    "silver",
    "orange",
    "quiet",
    "forest",
    "engine",
    "little",
    "market",
    "yellow",
    "summer",
    "bridge",
    "letter",
    "valley",
    "green",
    "field",
    "music",
    "story",
]
_POOL_WORDS = 1 << 16


@dataclass(frozen=True)
class TokenFit:
    """Server tokens as a line in prompt units: ``intercept + slope * units``."""

    slope: float = 1.0
    intercept: float = 0.0
    source: str = "uncalibrated (1 word = 1 token assumed)"

    def units_for(self, tokens: int) -> int:
        return max(1, round((tokens - self.intercept) / self.slope))

    def tokens_for(self, units: int) -> int:
        return round(self.intercept + self.slope * units)

    @classmethod
    def from_points(cls, a: tuple[int, int], b: tuple[int, int], source: str) -> TokenFit:
        """Fit from two (units, server tokens) measurements."""
        (ua, ta), (ub, tb) = a, b
        slope = (tb - ta) / (ub - ua)
        if slope <= 0:
            return cls(source=f"{source} gave no usable slope; uncalibrated")
        return cls(slope=slope, intercept=ta - slope * ua, source=source)


class _Tokenizer:
    """A ``tokenizers`` tokenizer loaded from ``tokenizer.json`` (optional dependency)."""

    def __init__(self, path: Path) -> None:
        try:
            module: Any = importlib.import_module("tokenizers")
        except ImportError as exc:
            raise UsageError(
                "--tokenizer needs the 'tokenizers' package",
                hint="pip install tokenizers, or leave --tokenizer out to size prompts in words",
            ) from exc
        file = path / "tokenizer.json" if path.is_dir() else path
        try:
            self.impl = module.Tokenizer.from_file(str(file))
        except Exception as exc:  # the library raises a bare Exception on bad files
            raise UsageError(f"cannot load tokenizer {file}: {exc}") from exc
        self.name = str(path)

    def offsets(self, text: str) -> list[tuple[int, int]]:
        return [tuple(o) for o in self.impl.encode(text, add_special_tokens=False).offsets]

    def count(self, text: str) -> int:
        return len(self.impl.encode(text, add_special_tokens=False).ids)


@functools.lru_cache(maxsize=4)
def _word_pool(seed: int) -> tuple[str, tuple[int, ...]]:
    """The seeded pool text (doubled, so a slice may wrap around) and where each word starts.

    The words are ``random.Random(...).choices(VOCAB, k=_POOL_WORDS)``, drawn as ``choices``
    draws them (``VOCAB[floor(random() * n)]``), through C-level iterators only: the same
    words at a third of the time under a tracer (coverage), which runs a Python-level loop
    three times slower. A tuning session measures every candidate with the same seed, so the
    pool is made once a process.
    """
    rng = random.Random(f"servekit-pool:{seed}")
    draws = itertools.starmap(rng.random, itertools.repeat((), _POOL_WORDS))
    scaled = map(float(len(VOCAB)).__mul__, draws)
    words = list(map(VOCAB.__getitem__, map(math.floor, scaled)))
    text = " ".join(words + words)
    # each word starts one past the end of the one before
    lengths = map((1).__add__, map(len, text.split(" ")[:-1]))
    return text, tuple(itertools.accumulate(lengths, initial=0))


class PromptFactory:
    """Builds the prompt of a request id, ``units`` long (words or tokenizer tokens)."""

    def __init__(self, seed: int, tokenizer: Path | None = None) -> None:
        self.text, word_starts = _word_pool(seed)
        self.tokenizer = _Tokenizer(tokenizer) if tokenizer is not None else None
        self.starts: Sequence[int] = (
            word_starts if self.tokenizer is None else self._token_starts(self.tokenizer)
        )
        self.seed = seed

    @property
    def unit_name(self) -> str:
        return f"tokens of {self.tokenizer.name}" if self.tokenizer else "words"

    def _token_starts(self, tokenizer: _Tokenizer) -> list[int]:
        return [start for start, _ in tokenizer.offsets(self.text)]

    @property
    def max_units(self) -> int:
        return len(self.starts) // 2

    def prompt(self, request_id: str, units: int) -> str:
        """``request_id`` then ``units - 1`` units of pool text at an id-specific offset."""
        if units > self.max_units:
            raise UsageError(
                f"prompts longer than {self.max_units} {self.unit_name} are not supported"
            )
        body = max(units - 1, 0)
        first = random.Random(f"{self.seed}:{request_id}").randrange(self.max_units)
        start = self.starts[first]
        end = self.starts[first + body] if body else start
        return f"{request_id} {self.text[start:end].rstrip()}".rstrip()

    def count_units(self, text: str) -> int:
        """How many units ``text`` holds (as the factory counts them)."""
        if self.tokenizer is not None:
            return self.tokenizer.count(text)
        return len(text.split())


def count_completion(pieces: list[str], factory: PromptFactory | None) -> int:
    """Completion tokens counted client-side: the tokenizer's count, else one per event."""
    if factory is not None and factory.tokenizer is not None:
        return factory.tokenizer.count("".join(pieces))
    return len(pieces)
