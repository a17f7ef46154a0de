"""A tiny Qwen3-architecture model and tokenizer, built locally (nothing is downloaded).

The tokenizer is a byte-level BPE trained on the rendered training rows, so every byte is
encodable and the vocabulary fits the data; ChatML markers are atomic special tokens.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rsr.training.config import TinyModelConfig
from rsr.training.render import END_OF_TURN, TURN_START

PAD_TOKEN = "<|endoftext|>"
SPECIAL_TOKENS = [PAD_TOKEN, TURN_START, END_OF_TURN]


def train_tokenizer(texts: Iterable[str], vocab_size: int, chat_template: str) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(texts, trainer=trainer)
    wrapped = PreTrainedTokenizerFast(
        tokenizer_object=tok,
        eos_token=END_OF_TURN,
        pad_token=PAD_TOKEN,
        extra_special_tokens=[TURN_START],
    )
    wrapped.chat_template = chat_template
    return wrapped


def build_model(spec: TinyModelConfig, tokenizer: Any, max_length: int, seed: int) -> Any:
    import torch
    from transformers import GenerationConfig, Qwen3Config, Qwen3ForCausalLM

    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=spec.hidden_size,
        num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_heads,
        num_key_value_heads=spec.num_kv_heads,
        head_dim=spec.head_dim,
        intermediate_size=spec.intermediate_size,
        # RoPE has no learned positions: allow agent-length contexts at inference.
        max_position_embeddings=max(max_length, 32768),
        tie_word_embeddings=spec.tie_word_embeddings,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(seed)
    model = Qwen3ForCausalLM(config)
    model.generation_config = GenerationConfig(
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    return model
