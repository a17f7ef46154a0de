"""Evaluation through the engine: rsr/terminus2 on a real Docker sandbox against the served tiny
checkpoint, through Inspect's own `vllm/` provider and through `rsr-vllm/` (token ids and
logprobs). A random tiny model fails the task; what is checked is that the sample ends scored
and that the token ids rsr records are the engine's own for each call."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from engine_helpers import Served

pytestmark = [pytest.mark.docker, pytest.mark.slow]


def run_hello_world(model: Any, log_dir: Path, **harness: Any) -> Any:
    from inspect_ai import eval as inspect_eval

    from rsr.harness.terminus2 import terminus2
    from rsr.suites.inspect_tasks import suite_task

    task = suite_task("core", None, ["hello-world"], None, sandbox="docker", network="task",
                      integrity="strict", unpinned=False)
    task.solver = terminus2(**harness)
    logs = inspect_eval(task, model=model, display="none", log_format="eval", score=True,
                        fail_on_error=False, log_dir=str(log_dir))
    assert logs[0].status == "success", logs[0].error
    [sample] = logs[0].samples
    return sample


def attached(value: Any, attachments: dict[str, str]) -> Any:
    """The value with the log's `attachment://HASH` references replaced by their texts."""
    if isinstance(value, str) and value.startswith("attachment://"):
        return attachments[value.removeprefix("attachment://")]
    if isinstance(value, list):
        return [attached(v, attachments) for v in value]
    if isinstance(value, dict):
        return {k: attached(v, attachments) for k, v in value.items()}
    return value


def engine_post(url: str, body: dict[str, Any]) -> dict[str, Any]:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    return json.loads(urllib.request.urlopen(req, timeout=60).read())


def test_inspect_vllm_provider_runs_terminus2_on_the_served_checkpoint(served: Served,
                                                                       tmp_path: Path) -> None:
    from inspect_ai.model import get_model

    model = get_model(f"vllm/{served.name}", base_url=served.base_url, api_key="none")
    sample = run_hello_world(model, tmp_path, max_episodes=2, temperature=1.0)
    assert sample.error is None
    assert sample.scores and next(iter(sample.scores.values())).value["passed"] == 0.0
    calls = [e for e in sample.events if e.event == "model"]
    assert calls and all(e.output.model for e in calls)


def test_rsr_vllm_records_the_engines_own_token_ids_for_each_call(served: Served,
                                                                   tmp_path: Path) -> None:
    from inspect_ai.model import GenerateConfig, get_model

    from rsr.harness.tokens import sample_token_calls

    model = get_model(f"rsr-vllm/{served.name}", base_url=served.base_url,
                      config=GenerateConfig(max_tokens=64))
    sample = run_hello_world(model, tmp_path, max_episodes=2, temperature=1.0, record_tokens="engine")
    assert sample.error is None and sample.scores
    recorded = sample_token_calls(sample.store)
    events = [e for e in sample.events if e.event == "model" and e.call is not None]
    assert recorded and len(recorded) == len(events)
    for rec, event in zip(recorded, events, strict=True):
        assert rec.source == "engine"
        response = attached(event.call.response, sample.attachments)
        # The ids are the ones in that call's HTTP response, untouched ...
        assert rec.prompt_ids == response["prompt_token_ids"]
        assert rec.completion_ids == response["choices"][0]["token_ids"]
        assert rec.logprobs == [c["logprob"] for c in response["choices"][0]["logprobs"]["content"]]
        # ... and the engine's own: its tokenizer and chat template give the same prompt ids
        # for that call's messages (rsr renders nothing itself).
        messages = attached(event.call.request["messages"], sample.attachments)
        tokens = engine_post(served.root_url + "/tokenize", {
            "model": served.name, "messages": messages, "add_generation_prompt": True})
        assert tokens["tokens"] == rec.prompt_ids
        assert len(rec.completion_ids) == response["usage"]["completion_tokens"]

    # The run report reads the same log: one latency per call, the engine's token counts.
    from rsr.report.runstats import run_stats

    stats = run_stats([tmp_path])
    assert stats.samples == 1 and stats.model_calls == len(events) and not stats.infra_failures
    assert stats.tokens_in == sum(len(r.prompt_ids) for r in recorded)
    assert stats.tokens_out == sum(len(r.completion_ids) for r in recorded)
    assert 0 < stats.sandbox_start_p50_s <= stats.sandbox_start_p99_s < 120
    assert stats.model_latency_p50_s <= stats.model_latency_p99_s and stats.rollouts_per_hour > 0
