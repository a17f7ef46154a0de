"""Supervised fine-tuning on the factory's trajectories (full or LoRA; TRL + PEFT + accelerate).

Importing this package is cheap; torch/transformers/trl load only when training runs.
"""

from rsr.training.config import TrainRecipe, load_recipe
from rsr.training.render import DEFAULT_CHAT_TEMPLATE, load_chat_template, render_messages

__all__ = [
    "DEFAULT_CHAT_TEMPLATE",
    "TrainRecipe",
    "load_chat_template",
    "load_recipe",
    "render_messages",
]
