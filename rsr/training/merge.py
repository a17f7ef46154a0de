"""Fold a LoRA run's adapter into its base model: full weights that vLLM and transformers load."""

from __future__ import annotations

import json
from pathlib import Path

from rsr.errors import RsrError
from rsr.training.runcard import RUN_CARD

DTYPES = ("auto", "bfloat16", "float16", "float32")


def merge(run_dir: str | Path, out: str | Path, *, base: str | None = None,
          dtype: str = "auto") -> Path:
    """Merge `<run_dir>/final` (a LoRA adapter) into its base and save to `out`.

    `base` overrides the base model recorded in the run card (e.g. when the run moved).
    """
    from rsr.training.sft import _require_train_extra

    if dtype not in DTYPES:  # checked before the (slow) base model load
        raise RsrError(f"--dtype {dtype!r}: expected one of {', '.join(DTYPES)}")
    _require_train_extra()
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    run_dir, out = Path(run_dir), Path(out)
    card_path = run_dir / RUN_CARD
    if not card_path.is_file():
        raise RsrError(f"{run_dir}: no {RUN_CARD}; is this a finished `rsr train` run directory?")
    card = json.loads(card_path.read_text())
    final = run_dir / "final"
    if card.get("method") != "lora":
        raise RsrError(f"{run_dir}: method is {card.get('method')!r}, not 'lora'; its final/"
                       " already holds full weights")
    if not (final / "adapter_config.json").is_file():
        raise RsrError(f"{final}: no adapter_config.json")
    base = base or card["base_model"]
    torch_dtype = dtype if dtype == "auto" else getattr(torch, dtype)
    try:
        model = AutoModelForCausalLM.from_pretrained(base, dtype=torch_dtype)
    except OSError as e:
        raise RsrError(f"cannot load the base model {base!r} ({e}); pass --base PATH") from e
    merged = PeftModel.from_pretrained(model, final).merge_and_unload()
    tokenizer = AutoTokenizer.from_pretrained(final)
    # Generation must stop on the chat template's end-of-turn token, whatever the base said.
    merged.generation_config.eos_token_id = tokenizer.convert_tokens_to_ids(tokenizer.eos_token)
    merged.generation_config.pad_token_id = tokenizer.pad_token_id
    out.mkdir(parents=True, exist_ok=True)
    merged.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out
