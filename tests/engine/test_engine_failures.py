"""The engine's failures end samples truthfully: scored, with their reason, never dropped.

A reply that fills the context window makes the next prompt longer than the window: the engine
refuses it and terminus2 recovers as Harbor's Terminus 2 does (unwind, summarise, hand off).
A call that times out, a server that is gone or one killed mid-run ends the sample in an
error, which the one rule (rsr.verify.outcome) scores as an infrastructure failure of kind
`model`: in the headline as a failure, counted apart, never dropped.
An empty or malformed reply is the engine answering: as in Harbor's Terminus 2 it is a parse
error the model is told about, the run goes on, and the sample is the agent's failure, scored
by its tests, with the parse errors (and which were empty) counted in the harness result.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from engine_helpers import MAX_MODEL_LEN, SERVED, Served
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


def end_of_turn_bias(bias: float) -> dict[int, float]:
    from rsr.training.tiny import END_OF_TURN, SPECIAL_TOKENS

    return {SPECIAL_TOKENS.index(END_OF_TURN): bias}


# Inspect's vllm/ provider registers the served window (4096) for the name `tiny` process-wide
# once any test has used it; with it terminus2 would summarise before every turn (fewer than
# 8,000 tokens free). These tests are about single replies, so proactive summaries are off.
NO_SUMMARIES = {"summarise_free_tokens": 0}


def model_calls(sample: Any) -> list[Any]:
    return [e for e in sample.events if e.event == "model"]


def assert_scored_as_the_agents_failure(sample: Any, log_dir: Path) -> dict[str, Any]:
    """The run ended by itself and its tests ran: a 0, not an infrastructure failure."""
    from rsr.report.runstats import run_stats

    assert sample.error is None and sample.scores
    score = next(iter(sample.scores.values()))
    assert score.value["passed"] == 0.0 and score.metadata.get("infra") is None, score.metadata
    assert score.metadata["agent_end_reason"] == "max_episodes"
    assert score.metadata["returncode"] not in (None, 0)  # the verifier ran the task's tests
    stats = run_stats([log_dir])
    assert stats.samples == 1 and not stats.infra_failures
    result: dict[str, Any] = sample.store["rsr_harness_result"]
    return result


def test_an_empty_reply_is_a_parse_error_of_the_agent_counted_as_empty(
        served: Served, tmp_path: Path) -> None:
    from inspect_ai.model import GenerateConfig, get_model

    # End of turn forced first: the engine answers 200 with empty content.
    model = get_model(f"rsr-vllm/{served.name}", base_url=served.base_url,
                      config=GenerateConfig(logit_bias=end_of_turn_bias(100.0)))
    sample = run_hello_world(model, tmp_path, max_episodes=3, temperature=0.0, **NO_SUMMARIES)
    calls = model_calls(sample)
    assert len(calls) == 3 and all(e.error is None and e.output.completion == "" for e in calls)
    result = assert_scored_as_the_agents_failure(sample, tmp_path)
    assert result["end_reason"] == "max_episodes" and result["turns"] == 3
    assert result["parse_errors"] == 3 and result["empty_replies"] == 3
    refused = [m for m in sample.messages if m.role == "assistant"]
    assert len(refused) == 3 and all(m.metadata["rsr_parse"]["error"] for m in refused)


def test_a_malformed_reply_is_a_parse_error_of_the_agent_and_the_run_goes_on(
        served: Served, tmp_path: Path) -> None:
    from inspect_ai.model import GenerateConfig, get_model

    from rsr.harness.prompts.pack import prompt_pack
    from rsr.harness.protocol import parse_reply_result

    # The untrained model's own greedy tokens, held back from ending the turn for 12 tokens and
    # then made to end it: a short reply, deterministic, that is not Terminus 2's JSON.
    model = get_model(f"rsr-vllm/{served.name}", base_url=served.base_url,
                      config=GenerateConfig(logit_bias=end_of_turn_bias(100.0), seed=0,
                                            extra_body={"min_tokens": 12}))
    sample = run_hello_world(model, tmp_path, max_episodes=3, temperature=0.0, **NO_SUMMARIES)
    calls = model_calls(sample)
    assert len(calls) == 3 and all(e.error is None for e in calls)
    replies = [e.output.completion for e in calls]
    assert all(r.strip() and parse_reply_result(r, "json", prompt_pack("rsr")).error
               for r in replies), replies
    assert all(e.output.stop_reason == "stop" for e in calls)  # ended by the model, not cut off
    result = assert_scored_as_the_agents_failure(sample, tmp_path)
    assert result["end_reason"] == "max_episodes" and result["turns"] == 3
    assert result["parse_errors"] == 3 and result["empty_replies"] == 0
    # Each parse error was answered with the parse-error prompt, and the run went on.
    kinds = [m.metadata["rsr"]["kind"] for m in sample.messages if m.role == "user"]
    assert kinds.count("parse_error") >= 2, kinds


def kill_after_first_answer(log: Path, pid: int, killed: dict[str, float],
                            stop: threading.Event) -> None:
    """SIGKILL the engine's process group once its log shows one answered chat completion."""
    answered = '"POST /v1/chat/completions HTTP/1.1" 200'
    while not stop.is_set():
        if log.is_file() and answered in log.read_text(errors="replace"):
            os.killpg(pid, signal.SIGKILL)
            killed["at"] = time.time()
            return
        time.sleep(0.05)


def test_an_engine_killed_mid_run_ends_the_sample_scored_as_a_model_infra_failure(
        engine_env: Any, tiny_checkpoint: Path, tmp_path: Path) -> None:
    from inspect_ai.model import GenerateConfig, get_model

    from rsr.engine.server import ServeSpec, VllmServer, free_port, port_in_use
    from rsr.report.runstats import run_stats

    spec = ServeSpec(checkpoint=tiny_checkpoint, served_name=SERVED, port=free_port(),
                     max_model_len=MAX_MODEL_LEN, extra_args=["--enforce-eager"],
                     log=tmp_path / "engine" / "vllm.log")
    logs = tmp_path / "logs"
    killed: dict[str, float] = {}
    stop = threading.Event()
    with VllmServer(spec) as server:
        assert server.process is not None
        watcher = threading.Thread(target=kill_after_first_answer,
                                   args=(server.log, server.process.pid, killed, stop), daemon=True)
        watcher.start()
        # Short sampled replies that differ from each other: without the kill the run would go
        # on for 200 turns (no identical-refusal stop), so the kill lands mid-run.
        model = get_model(f"rsr-vllm/{SERVED}", base_url=server.base_url,
                          config=GenerateConfig(logit_bias=end_of_turn_bias(100.0), max_retries=1,
                                                timeout=10, extra_body={"min_tokens": 4}))
        try:
            sample = run_hello_world(model, logs, max_episodes=200, temperature=1.0,
                                     **NO_SUMMARIES)
        finally:
            stop.set()
            watcher.join(timeout=5)
        assert "at" in killed and not server.alive()
    assert not port_in_use("127.0.0.1", spec.port), "an engine process outlived the kill"

    calls = model_calls(sample)
    answered = [e for e in calls if e.error is None]
    # Mid-run: the engine answered before it died, and the run's last call is the one that failed.
    assert answered and calls[-1].error is not None, [e.error for e in calls]
    assert sample.error is not None and sample.scores  # ended in an error, and scored: not dropped
    score = next(iter(sample.scores.values()))
    assert score.value["passed"] == 0.0
    infra = score.metadata["infra"]
    assert infra["kind"] == "model" and "onnect" in infra["message"], score.metadata
    stats = run_stats([logs])
    assert stats.samples == 1 and stats.infra_failures == {"model": 1}
