from __future__ import annotations

import hashlib
import random
from pathlib import Path

import pytest

from servekit.bench.prompts import _POOL_WORDS, VOCAB, PromptFactory, TokenFit, count_completion


def test_prompts_are_deterministic_unique_and_sized() -> None:
    a, b = PromptFactory(seed=3), PromptFactory(seed=3)
    assert a.prompt("r1-c1-m0000", 300) == b.prompt("r1-c1-m0000", 300)
    first, second = a.prompt("r1-c1-m0000", 300), a.prompt("r1-c1-m0001", 300)
    assert first.split()[0] == "r1-c1-m0000" and second.split()[0] == "r1-c1-m0001"
    assert first.split()[1:20] != second.split()[1:20]
    assert len(first.split()) == 300
    assert PromptFactory(seed=4).prompt("r1-c1-m0000", 300) != first


def test_a_seed_gives_the_prompts_it_gave_before() -> None:
    """The pool is the words ``random.Random(...).choices`` draws (as earlier releases drew
    them) and a unit starts where ``split`` finds a word, so a recorded run's prompts are
    made again the same: the digest is of a prompt made before the pool was drawn through
    C-level iterators."""
    for seed in (0, 7):
        words = random.Random(f"servekit-pool:{seed}").choices(VOCAB, k=_POOL_WORDS)
        factory = PromptFactory(seed)
        assert factory.text == " ".join(words + words)
        starts = [0]
        for word in factory.text.split(" ")[:-1]:
            starts.append(starts[-1] + len(word) + 1)
        assert list(factory.starts) == starts
    prompt = PromptFactory(7).prompt("r1-c1-m0000", 300).encode()
    assert hashlib.sha256(prompt).hexdigest() == (
        "6edf5a32554d34d208ab2034601c18559a5c9a4ca6581bb9622e9f401375e32c"
    )


def test_long_prompts_are_supported() -> None:
    factory = PromptFactory(seed=0)
    assert len(factory.prompt("x", 36000).split()) == 36000


def test_token_fit_inverts() -> None:
    fit = TokenFit.from_points((16, 30), (256, 330), "test")
    assert fit.slope == pytest.approx(1.25) and fit.intercept == pytest.approx(10.0)
    assert fit.tokens_for(fit.units_for(1010)) == 1010
    assert TokenFit.from_points((16, 30), (256, 30), "flat").slope == 1.0


def test_tokenizer_sizes_prompts_in_its_own_tokens(tmp_path: Path) -> None:
    tokenizers = pytest.importorskip("tokenizers")
    factory = PromptFactory(seed=0)
    vocab = {w: i for i, w in enumerate([*sorted(set(factory.text.split())), "[UNK]"])}
    model = tokenizers.models.WordLevel(vocab=vocab, unk_token="[UNK]")
    tok = tokenizers.Tokenizer(model)
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tok.save(str(tmp_path / "tokenizer.json"))
    sized = PromptFactory(seed=0, tokenizer=tmp_path)
    prompt = sized.prompt("r1-c1-m0000", 500)
    assert sized.count_units(prompt) == pytest.approx(500, abs=8)  # the id adds a few tokens
    assert count_completion([" river", " stone"], sized) == 2
    assert count_completion([" river stone"], None) == 1  # one event, one token
