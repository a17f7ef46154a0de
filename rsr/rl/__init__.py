"""Verifier-rewarded RL: GRPO on TRL with rollouts through Inspect (`rsr rl CONFIG`).

Modules: config (RLConfig), grpo (the run), rollout (Inspect rollouts -> TRL sequences),
engine + policy_server (where rollouts are generated, weight pushes), provider/token_api
(the `rsr-vllm/` Inspect provider), coldstart (the rl-tiny cold start), runcard.
Importing this package is cheap; torch/transformers/trl load only when training runs.
"""
