"""Training with the checkpoint's own chat template (the default), reasoning included.

The checkpoint is a tiny Qwen3 built here whose tokenizer carries a Qwen-style template of its
own: no `{% generation %}` markers (TRL cannot mask with it) and a `<think>` block for the
reasoning of each reply. Training must use that template, keep the reasoning, check the mask
on every row and save the template the checkpoint will be served with."""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path
from typing import Any

import pytest
from training_helpers import recipe_dict, write_jsonl

pytest.importorskip("trl")
pytestmark = pytest.mark.slow

OWN_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{- '<|im_start|>' + message['role'] + '\\n' -}}"
    "{%- if message['role'] == 'assistant' and message.reasoning_content is defined"
    " and message.reasoning_content -%}"
    "{{- '<think>\\n' + message.reasoning_content + '\\n</think>\\n\\n' -}}"
    "{%- endif -%}"
    "{{- message['content'] + '<|im_end|>\\n' -}}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{- '<|im_start|>assistant\\n' -}}{%- endif -%}")


@pytest.fixture(scope="module")
def own_checkpoint(tmp_path_factory: pytest.TempPathFactory,
                   fixture_rows: list[dict[str, Any]]) -> tuple[Path, list[dict[str, Any]]]:
    from rsr.training.config import TinyModelConfig
    from rsr.training.render import render_messages
    from rsr.training.tiny import build_model, train_tokenizer

    rows = copy.deepcopy(fixture_rows)
    for i, row in enumerate(rows[:8]):
        for m in row["messages"]:
            if m["role"] == "assistant":
                m["reasoning_content"] = f"Think first about step {i}: what does the screen say?"
    texts = [render_messages(r["messages"], chat_template=OWN_TEMPLATE) for r in rows]
    tok = train_tokenizer(texts, 1024, OWN_TEMPLATE)
    ckpt = tmp_path_factory.mktemp("own") / "ckpt"
    build_model(TinyModelConfig(), tok, 1024, 0).save_pretrained(ckpt)
    tok.save_pretrained(ckpt)
    return ckpt, rows


def test_sft_does_train_with_the_models_own_template_and_keeps_reasoning(
        own_checkpoint: tuple[Path, list[dict[str, Any]]], tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from rsr.training.config import TrainRecipe
    from rsr.training.sft import run

    ckpt, rows = own_checkpoint
    data = write_jsonl(tmp_path / "rows.jsonl", rows)
    recipe = recipe_dict(tmp_path / "run", [data], model={"path": str(ckpt), "dtype": "float32"},
                         train={"epochs": 4})
    assert "chat_template" not in recipe  # the default: the model's own
    card = run(TrainRecipe.model_validate(recipe))
    assert card.chat_template == "model"
    assert card.chat_template_sha256 == hashlib.sha256(OWN_TEMPLATE.encode()).hexdigest()
    assert card.reasoning_rows == 8 and card.mask_rows_checked == card.rows == 24
    assert card.train_loss_end < card.train_loss_start
    final = AutoTokenizer.from_pretrained(tmp_path / "run" / "final")
    assert final.chat_template == OWN_TEMPLATE  # what vLLM / hf/ will render at inference
    # The reasoning is in the trained tokens: the masked span of a reply holds its <think>.
    from rsr.training.data import expected_assistant_mask

    msgs = rows[0]["messages"]
    ids, mask = expected_assistant_mask(final, OWN_TEMPLATE, msgs, "<|im_end|>")
    trained = final.decode([t for t, bit in zip(ids, mask, strict=True) if bit])
    assert "<think>\nThink first about step 0" in trained


def test_sft_rejects_reasoning_rows_with_a_template_that_would_drop_it(
        own_checkpoint: tuple[Path, list[dict[str, Any]]], tmp_path: Path) -> None:
    from rsr.errors import RsrError
    from rsr.training.config import TrainRecipe
    from rsr.training.sft import run

    ckpt, rows = own_checkpoint
    data = write_jsonl(tmp_path / "rows.jsonl", rows)
    recipe = recipe_dict(tmp_path / "run", [data], model={"path": str(ckpt), "dtype": "float32"},
                         chat_template="rsr-chatml-v1")
    with pytest.raises(RsrError, match="8 training row.*reasoning_content.*does not render it"):
        run(TrainRecipe.model_validate(recipe))
