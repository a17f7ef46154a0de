"""Verifier-rewarded RL: GRPO on TRL with rollouts through Inspect (`rsr rl CONFIG`).

Importing this package is cheap; torch/transformers/trl load only when training runs.
"""

from rsr.rl.config import RLConfig, load_rl_config

__all__ = ["RLConfig", "load_rl_config"]
