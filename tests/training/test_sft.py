"""Real training steps on a tiny Qwen3 model (CPU): full and LoRA SFT, reload, merge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from training_helpers import TRAJECTORIES, recipe_dict, write_jsonl, write_recipe

pytest.importorskip("trl")
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def lora_run(full_run: tuple[Path, Any], tmp_path_factory: pytest.TempPathFactory):
    """LoRA on top of the briefly trained full model, fitted to trajectories it has not seen.

    In a model this small the output layer carries most of the loss: a LoRA on the attention
    and MLP projections alone barely moves it (2.51 -> 2.49 in 32 steps), and TRL computes the
    loss from lm_head.weight directly (no LoRA on lm_head), so lm_head is trained in full
    (`modules_to_save`) next to the LoRA adapters."""
    from training_helpers import make_rows

    from rsr.training.config import TrainRecipe
    from rsr.training.sft import run

    tmp = tmp_path_factory.mktemp("lora")
    data = write_jsonl(tmp / "new.jsonl", make_rows(16, seed=7))
    recipe = recipe_dict(tmp / "run", [data], method="lora",
                         model={"path": str(full_run[0] / "final"), "dtype": "float32"},
                         lora={"r": 8, "alpha": 16, "dropout": 0.0,
                               "target_modules": "all-linear", "modules_to_save": ["lm_head"]},
                         train={"learning_rate": 5e-3, "epochs": 8})
    card = run(TrainRecipe.model_validate(recipe), recipe_path=write_recipe(tmp / "r.yaml", recipe))
    return tmp / "run", card


def test_full_sft_overfits_tiny_dataset(full_run: tuple[Path, Any]) -> None:
    run_dir, card = full_run
    assert card.train_loss_end < 0.5 * card.train_loss_start, (card.train_loss_start,
                                                               card.train_loss_end)
    assert card.logged_loss[-1][1] < card.logged_loss[0][1]


def test_full_sft_holds_out_whole_tasks_and_reports_their_loss(
        full_run: tuple[Path, Any]) -> None:
    _, card = full_run
    assert card.validation_tasks == ["core/count-lines"] and card.validation_rows == 5
    # Never trained on: the fixture's count-lines rows are absent from the training rows.
    assert card.rows == 20
    assert card.validation_loss_start is not None and card.validation_loss_end is not None
    # The reply format carries over to unseen tasks, so held-out loss falls too, but less.
    assert card.validation_loss_end < card.validation_loss_start
    assert card.validation_loss_end > card.train_loss_end


def test_validation_tasks_are_chosen_by_task_and_seed_not_by_row(
        fixture_rows: list[dict[str, Any]]) -> None:
    from rsr.training.data import TrajectoryRow, validation_tasks

    rows = [TrajectoryRow.model_validate(r) for r in fixture_rows]
    held = validation_tasks(rows, 0.25, [], seed=0)
    assert len(held) == 1 and held == validation_tasks(list(reversed(rows)), 0.25, [], seed=0)
    assert validation_tasks(rows, 0.5, ["core/make-dir"], seed=0) >= {"core/make-dir"}
    assert validation_tasks(rows, 0.0, [], seed=0) == set()


def test_full_sft_writes_run_card_plot_and_loadable_final(full_run: tuple[Path, Any]) -> None:
    run_dir, card = full_run
    saved = json.loads((run_dir / "run_card.json").read_text())
    for key in ("train_loss_start", "train_loss_end", "rows", "rows_dropped_too_long",
                "git_commit", "recipe", "datasets", "versions"):
        assert key in saved
    assert saved["datasets"][0]["sha256"].startswith("sha256:")
    assert saved["mask_rows_checked"] == saved["rows"]
    assert (run_dir / "loss_curve.png").read_bytes()[:4] == b"\x89PNG"
    final = run_dir / "final"
    for name in ("config.json", "model.safetensors", "tokenizer.json", "chat_template.jinja",
                 "generation_config.json"):
        assert (final / name).is_file(), name


def test_full_sft_reports_long_trajectories_instead_of_truncating(
        full_run: tuple[Path, Any]) -> None:
    _, card = full_run
    long = next(d for d in card.datasets if d.name == "long")
    assert (long.rows_read, long.rows_kept, long.rows_split, long.rows_dropped_too_long) == (
        2, 1, 1, 2)
    assert long.steps_kept == 2 and long.steps_dropped_too_long == 1 + 3
    assert card.rows == 24 - 5 + 1 and card.rows_dropped_too_long == 2
    assert [(s["dataset"], s["row"], s["piece"]) for s in card.skipped_too_long] == [
        ("long", 0, 0), ("long", 1, 0)]


def test_saved_checkpoint_reloads_and_generates(full_run: tuple[Path, Any]) -> None:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rsr.training.render import render_messages

    final = full_run[0] / "final"
    tok = AutoTokenizer.from_pretrained(final)
    model = AutoModelForCausalLM.from_pretrained(final)
    prompt = [json.loads(x) for x in (Path(__file__).parent / "fixtures" /
                                      "trajectories.jsonl").read_text().splitlines()][0]
    text = render_messages(prompt["messages"][:1], chat_template=tok.chat_template,
                           add_generation_prompt=True)
    assert text == tok.apply_chat_template(prompt["messages"][:1], tokenize=False,
                                           add_generation_prompt=True)
    ids = tok(text, return_tensors="pt", add_special_tokens=False)
    with torch.no_grad():
        out = model.generate(**ids, max_new_tokens=40, do_sample=False)
    new = tok.decode(out[0, ids["input_ids"].shape[1]:], skip_special_tokens=True)
    assert len(out[0]) > ids["input_ids"].shape[1] and new
    # Trained on replies that open with '{"analysis": ', greedy decoding should too.
    assert new.startswith('{"'), new


def test_lora_sft_on_trained_base_lowers_loss(lora_run: tuple[Path, Any]) -> None:
    run_dir, card = lora_run
    assert card.method == "lora"
    assert card.train_loss_end < 0.75 * card.train_loss_start, (card.train_loss_start,
                                                                card.train_loss_end)
    assert (run_dir / "final" / "adapter_config.json").is_file()


def test_merged_lora_matches_adapter_logits(lora_run: tuple[Path, Any], tmp_path: Path) -> None:
    import torch
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from rsr.cli.main import main

    run_dir, card = lora_run
    out = tmp_path / "merged"
    assert main(["train", "merge", str(run_dir), "--out", str(out)]) == 0
    tok = AutoTokenizer.from_pretrained(out)
    ids = tok("root@sandbox:/app# ls\n", return_tensors="pt", add_special_tokens=False)
    base = AutoModelForCausalLM.from_pretrained(card.base_model)
    adapter = PeftModel.from_pretrained(base, run_dir / "final").eval()
    merged = AutoModelForCausalLM.from_pretrained(out).eval()
    with torch.no_grad():
        a, m = adapter(**ids).logits, merged(**ids).logits
    assert torch.allclose(a, m, atol=1e-4), (a - m).abs().max()
    with torch.no_grad():  # PeftModel wrapped `base` in place: reload it to compare
        b = AutoModelForCausalLM.from_pretrained(card.base_model)(**ids).logits
    assert not torch.allclose(a, b, atol=1e-3)  # the adapter did something
    assert (out / "chat_template.jinja").is_file()
    # The low-rank matrices themselves were trained (B starts at zero), so the merge folded
    # real deltas into the projections, not just the saved lm_head.
    from safetensors.torch import load_file

    lora_b = [t for k, t in load_file(run_dir / "final" / "adapter_model.safetensors").items()
              if "lora_B" in k]
    assert lora_b and all(t.abs().max() > 0 for t in lora_b)


def test_rsr_train_merge_rejects_a_full_fine_tune(full_run: tuple[Path, Any], tmp_path: Path,
                                                 capsys: pytest.CaptureFixture) -> None:
    from rsr.cli.main import main

    assert main(["train", "merge", str(full_run[0]), "--out", str(tmp_path / "x")]) == 2
    assert "not 'lora'" in " ".join(capsys.readouterr().err.split())
    assert not (tmp_path / "x").exists()


def test_packed_sft_trains_exactly_the_assistant_tokens(tmp_path: Path) -> None:
    from rsr.training.config import TrainRecipe
    from rsr.training.sft import run

    recipe = recipe_dict(tmp_path / "run", [TRAJECTORIES], data={"packing": True},
                         train={"epochs": 2})
    card = run(TrainRecipe.model_validate(recipe))
    # Packed rows still train exactly the checked assistant tokens, none lost or added.
    assert card.assistant_tokens == card.mask_assistant_tokens_checked
    assert card.rows == 24 and card.global_steps < 2 * 24 / 4  # packed: fewer, fuller batches
    assert card.train_loss_end < card.train_loss_start
