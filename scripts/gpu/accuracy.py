"""A small exact-match accuracy check of one checkpoint, served and in transformers.

The question set is generated here, with no download: QUESTIONS additions of two numbers
below 50 from a fixed seed, each asked after the same three worked examples, scored by
exact match of the first integer in a greedy answer of at most 6 tokens. The same prompts
go to

- ``served``: the running engine's ``/v1/completions`` (temperature 0), and
- ``transformers``: the same checkpoint directory in transformers on the same GPU (greedy).

Prints one JSON object: both scores, how often the two answers agree, and every question
with both answers, so each score can be recounted.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import urllib.request
from pathlib import Path

QUESTIONS = 200
SEED = 20261201
SHOTS = "Q: What is 12 + 7?\nA: 19\nQ: What is 30 + 25?\nA: 55\nQ: What is 8 + 41?\nA: 49\n"
MAX_TOKENS = 6


def questions(n: int = QUESTIONS, seed: int = SEED) -> list[tuple[str, int]]:
    """``n`` (prompt, answer) pairs, the same for a given seed on every machine."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a, b = rng.randrange(50), rng.randrange(50)
        out.append((f"{SHOTS}Q: What is {a} + {b}?\nA:", a + b))
    return out


def answer(text: str) -> int | None:
    """The first integer in a completion, or None."""
    match = re.search(r"-?\d+", text)
    return int(match.group()) if match else None


def served(endpoint: str, model: str, prompts: list[str]) -> list[str]:
    texts = []
    for prompt in prompts:
        body = {"model": model, "prompt": prompt, "max_tokens": MAX_TOKENS, "temperature": 0}
        req = urllib.request.Request(
            f"{endpoint}/v1/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=60) as resp:
            texts.append(json.load(resp)["choices"][0]["text"])
    return texts


def in_transformers(model_dir: Path, prompts: list[str]) -> list[str]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.bfloat16).to("cuda")
    texts = []
    for prompt in prompts:
        ids = tok(prompt, return_tensors="pt").to("cuda")
        with torch.no_grad():
            out = model.generate(
                **ids, max_new_tokens=MAX_TOKENS, do_sample=False, pad_token_id=tok.eos_token_id
            )
        texts.append(tok.decode(out[0, ids["input_ids"].shape[1] :], skip_special_tokens=True))
    return texts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("side", choices=["served", "transformers"])
    parser.add_argument("--endpoint", default="http://127.0.0.1:8000")
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--model-dir", type=Path)
    args = parser.parse_args()
    qs = questions()
    prompts = [p for p, _ in qs]
    if args.side == "served":
        texts = served(args.endpoint, args.model, prompts)
    else:
        texts = in_transformers(args.model_dir, prompts)
    correct = sum(answer(t) == a for t, (_, a) in zip(texts, qs, strict=True))
    record = {
        "side": args.side,
        "questions": len(qs),
        "seed": SEED,
        "correct": correct,
        "score": correct / len(qs),
        "answers": [
            {"expected": a, "text": t, "answer": answer(t)}
            for t, (_, a) in zip(texts, qs, strict=True)
        ],
    }
    print(json.dumps(record))


if __name__ == "__main__":
    main()
