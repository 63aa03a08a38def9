"""Create the small Llama model measured on the GPU machine, deterministically, with no downloads.

The weights are random (torch.manual_seed), so the model has no accuracy to speak of: it exists
to be served and measured. Running this twice with the same versions of torch, transformers and
tokenizers gives byte-identical files, which `servekit model digest` and `servekit verify weights`
prove (docs/gpu-run.md).

Generation never stops early: the config has no EOS token, so every request produces exactly the
number of tokens asked for (the engine used here rejects `ignore_eos`).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

VOCAB = 32000
SPECIAL = ["<unk>", "<s>", "</s>", "<pad>"]
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)


def build_tokenizer() -> PreTrainedTokenizerFast:
    """A word-level tokenizer: one token per whitespace-separated word (or punctuation run)."""
    vocab = {word: i for i, word in enumerate(SPECIAL + [f"w{i}" for i in range(VOCAB - 4)])}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core, unk_token="<unk>", bos_token="<s>", pad_token="<pad>"
    )
    tok.chat_template = CHAT_TEMPLATE
    return tok


SIZES = {
    # name: (hidden, intermediate, layers, heads, kv heads)
    "850m": (2048, 5632, 16, 16, 4),  # 852,559,872 parameters
    "tiny": (64, 128, 2, 4, 2),  # for dry runs on a CPU
}


def build_model(size: str) -> LlamaForCausalLM:
    hidden, intermediate, layers, heads, kv_heads = SIZES[size]
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=hidden,
        intermediate_size=intermediate,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        max_position_embeddings=4096,
        bos_token_id=1,
        eos_token_id=None,
        pad_token_id=3,
        tie_word_embeddings=False,
        torch_dtype="bfloat16",
    )
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.generation_config = GenerationConfig(bos_token_id=1, pad_token_id=3, eos_token_id=None)
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="Directory to write the model into.")
    parser.add_argument("--size", choices=sorted(SIZES), default="850m", help="Model size.")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    build_model(args.size).save_pretrained(args.out, safe_serialization=True, max_shard_size="1GB")
    build_tokenizer().save_pretrained(args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
