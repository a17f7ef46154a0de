"""The engine's failures end samples truthfully: scored, with their reason, never dropped.

A reply that fills the context window makes the next prompt longer than the window: the engine
refuses it and terminus2 recovers as Harbor's Terminus 2 does (unwind, summarise, hand off).
A call that times out (or a server that is gone) ends the sample in an error, which the one
rule (rsr.verify.outcome) scores as an infrastructure failure of kind `model`: in the headline
as a failure, counted apart, never dropped.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from engine_helpers import Served
from test_engine_eval import run_hello_world

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def test_a_prompt_longer_than_the_window_is_recovered_as_terminus2_does(
        served: Served, tmp_path: Path) -> None:
    from inspect_ai.model import GenerateConfig, get_model

    # End of turn and padding banned: the first reply runs to the end of the 4096-token window,
    # so the conversation no longer fits it.
    from rsr.training.tiny import END_OF_TURN, PAD_TOKEN, SPECIAL_TOKENS

    banned = {SPECIAL_TOKENS.index(t): -100.0 for t in (END_OF_TURN, PAD_TOKEN)}
    model = get_model(f"vllm/{served.name}", base_url=served.base_url, api_key="none",
                      config=GenerateConfig(logit_bias=banned))
    sample = run_hello_world(model, tmp_path, max_episodes=2, temperature=1.0)
    assert sample.error is None and sample.scores
    result = sample.store["rsr_harness_result"]
    # The engine stops the reply at the window's end (finish_reason length with no room left:
    # stop_reason model_length) or refuses the next prompt (HTTP 400, "maximum context
    # length"); either way the conversation is unwound and handed off, and the run goes on.
    assert any(c["reason"].startswith("context-length error: ") for c in result["compactions"])
    assert result["turns"] >= 1
    assert result["end_reason"] in ("max_episodes", "completed", "repeated_refusal")


def test_a_model_call_that_times_out_ends_the_sample_scored_as_a_model_infra_failure(
        served: Served, tmp_path: Path) -> None:
    from inspect_ai.model import GenerateConfig, get_model

    from rsr.report.runstats import run_stats

    model = get_model(f"rsr-vllm/{served.name}", base_url=served.base_url,
                      config=GenerateConfig(max_tokens=3000, timeout=1, attempt_timeout=1,
                                            max_retries=1))
    sample = run_hello_world(model, tmp_path, max_episodes=3, temperature=1.0)
    assert sample.error is not None and sample.scores  # ended in an error, and scored: not dropped
    score = next(iter(sample.scores.values()))
    assert score.value["passed"] == 0.0
    assert score.metadata["infra"]["kind"] == "model", score.metadata
    assert run_stats([tmp_path]).infra_failures == {"model": 1}


def test_a_server_that_is_gone_ends_the_sample_scored_as_a_model_infra_failure(
        engine_env: object, tmp_path: Path) -> None:
    from inspect_ai.model import GenerateConfig, get_model

    from rsr.engine.server import free_port

    # The port of a server that has stopped: nothing listens there any more.
    url = f"http://127.0.0.1:{free_port()}/v1"
    model = get_model("rsr-vllm/tiny", base_url=url, config=GenerateConfig(max_retries=1, timeout=5))
    sample = run_hello_world(model, tmp_path, max_episodes=2)
    assert sample.error is not None and sample.scores
    score = next(iter(sample.scores.values()))
    assert score.value["passed"] == 0.0 and score.metadata["infra"]["kind"] == "model", score.metadata
    assert "onnect" in score.metadata["infra"]["message"], score.metadata
