"""Recipes: YAML -> typed TrainRecipe, with errors naming the file and the field."""

from __future__ import annotations

from pathlib import Path

import pytest
from training_helpers import recipe_dict, write_recipe

from rsr.training.config import RecipeError, load_recipe

RECIPES = Path(__file__).parents[2] / "training" / "recipes"


@pytest.mark.parametrize("name", ["tiny-cpu", "full-qwen-27b", "lora-qwen-27b",
                                  "direct-sft-qwen-27b", "direct-sft-stripped-qwen-27b",
                                  "tiny-smoke-rsr", "tiny-smoke-direct-sft",
                                  "tiny-smoke-direct-sft-stripped"])
def test_load_recipe_does_accept_shipped_recipes(name: str) -> None:
    recipe = load_recipe(RECIPES / f"{name}.yaml")
    assert recipe.name == name
    if name.startswith("lora"):
        assert recipe.method == "lora" and recipe.lora is not None


def test_load_recipe_rejects_unknown_key_naming_the_field(tmp_path: Path) -> None:
    r = recipe_dict(tmp_path / "out", [tmp_path / "d.jsonl"], train={"learning_rat": 1e-3})
    with pytest.raises(RecipeError, match=r"recipe.yaml: train.learning_rat: Extra inputs"):
        load_recipe(write_recipe(tmp_path / "recipe.yaml", r))


def test_load_recipe_rejects_model_with_both_path_and_tiny(tmp_path: Path) -> None:
    r = recipe_dict(tmp_path / "out", [tmp_path / "d.jsonl"])
    r["model"]["path"] = "Qwen/Qwen3-0.6B"
    with pytest.raises(RecipeError, match="exactly one of `path`"):
        load_recipe(write_recipe(tmp_path / "recipe.yaml", r))


def test_load_recipe_rejects_lora_section_on_full_method(tmp_path: Path) -> None:
    r = recipe_dict(tmp_path / "out", [tmp_path / "d.jsonl"], lora={"r": 8})
    with pytest.raises(RecipeError, match="method is 'full'"):
        load_recipe(write_recipe(tmp_path / "recipe.yaml", r))


def test_load_recipe_rejects_missing_file(tmp_path: Path) -> None:
    with pytest.raises(RecipeError, match="recipe file not found"):
        load_recipe(tmp_path / "nope.yaml")


def test_baseline_recipes_do_train_on_what_the_factory_exports() -> None:
    from rsr.factory.config import load_config
    from rsr.factory.export import BASELINES

    smoke = load_config(RECIPES.parents[1] / "examples" / "factory-smoke.yaml").output_dir
    root = RECIPES.parents[1]
    for name in ("direct-sft", "direct-sft-stripped"):
        assert name in BASELINES
        big = load_recipe(RECIPES / f"{name}-qwen-27b.yaml")
        assert [d.path for d in big.data.datasets] == [root / f"runs/factory/baselines/{name}"]
        tiny = load_recipe(RECIPES / f"tiny-smoke-{name}.yaml")
        assert tiny.data.datasets[0].path == smoke / "baselines" / f"{name}.jsonl"
    tiny = load_recipe(RECIPES / "tiny-smoke-rsr.yaml")
    assert tiny.data.datasets[0].path == smoke / "dataset.jsonl"
