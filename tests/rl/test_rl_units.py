"""rsr rl without sandboxes: token records, stitching, the integrity rule, configs, the
policy server over HTTP, weight pushes, and the shuffled control's reward function."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from inspect_ai.model import ChatMessageUser, ModelOutput

from rsr.harness.tokens import ENGINE_TOKENS, TokenCall, engine_tokens, token_call
from rsr.rl.config import RLConfigError, load_rl_config
from rsr.rl.grpo import verifier_reward_func
from rsr.rl.rollout import integrity_reward, stitch

pytest.importorskip("transformers")


def call(i: int, prompt: list[int], completion: list[int], source: str = "engine") -> TokenCall:
    return TokenCall(call=i, model="m", source=source, prompt_ids=prompt,  # type: ignore[arg-type]
                     completion_ids=completion, logprobs=[-0.5] * len(completion))


def test_engine_tokens_reads_vllm_return_token_ids_shape():
    body = {"prompt_token_ids": [1, 2, 3], "choices": [{
        "token_ids": [7, 8], "logprobs": {"content": [{"logprob": -0.1}, {"logprob": -2.0}]}}]}
    assert engine_tokens(body) == {"prompt_ids": [1, 2, 3], "completion_ids": [7, 8],
                                   "logprobs": [-0.1, -2.0]}
    assert engine_tokens({"choices": [{"message": {}}]}) is None


def test_token_call_recomputes_when_provider_returns_no_ids(tiny: tuple[Any, Any, Path]):
    _, tok, path = tiny
    messages = [ChatMessageUser(content="Create the directory /app/out.")]
    output = ModelOutput.from_content("mockllm/model", "mkdir /app/out")
    rec = token_call(0, messages, output, str(path))
    assert rec.source == "recomputed" and rec.logprobs is None and "mockllm" in (rec.note or "")
    want = tok.apply_chat_template([{"role": "user", "content": messages[0].text}],
                                   add_generation_prompt=True, tokenize=True)["input_ids"]
    assert rec.prompt_ids == list(want)
    assert rec.completion_ids[-1] == tok.eos_token_id
    assert tok.decode(rec.completion_ids[:-1]) == "mkdir /app/out"
    # With "engine" there is nothing to fall back on: the record says so.
    assert token_call(0, messages, output, "engine").source == "unavailable"
    output.metadata = {ENGINE_TOKENS: {"prompt_ids": [5], "completion_ids": [6],
                                       "logprobs": [-1.0]}}
    assert token_call(1, messages, output, str(path)).source == "engine"


def test_stitch_masks_environment_tokens_between_calls():
    first = call(0, [1, 2], [3, 4])
    second = call(1, [1, 2, 3, 4, 9, 9], [5])  # the terminal's answer: 9 9
    seq = stitch([first, second], pad_id=0)
    assert seq.prompt_ids == [1, 2]
    assert seq.completion_ids == [3, 4, 9, 9, 5]
    assert seq.env_mask == [1, 1, 0, 0, 1]
    assert seq.logprobs == [-0.5, -0.5, 0.0, 0.0, -0.5]
    assert (seq.calls_used, seq.calls_dropped) == (2, 0)


def test_stitch_stops_at_a_call_that_does_not_extend_the_sequence():
    # A summarised context (or re-tokenised text) is not a prefix: never spliced in.
    seq = stitch([call(0, [1, 2], [3]), call(1, [1, 7, 3, 8], [4])], pad_id=0)
    assert seq.completion_ids == [3] and (seq.calls_used, seq.calls_dropped) == (1, 1)
    empty = stitch([], pad_id=0)
    assert empty.env_mask == [0] and empty.calls_used == 0


@pytest.mark.parametrize(("integrity", "want", "ok"), [
    ({"mode": "strict", "verdict": "clean"}, 1.0, True),
    ({"mode": "strict", "verdict": "tampered"}, 0.0, False),
    ({"mode": "strict", "verdict": "unchecked"}, 0.0, False),
    ({"mode": "warn", "verdict": "clean"}, 0.0, False),
    ({"mode": "strict", "verdict": "warning"}, 0.0, False),
    (None, 0.0, False),
])
def test_integrity_reward_withholds_positive_reward_unless_strictly_clean(
        integrity: dict[str, str] | None, want: float, ok: bool):
    assert integrity_reward(1.0, integrity)[:2] == (want, ok)
    assert integrity_reward(-1.0, integrity)[0] == -1.0  # penalties are never withheld


def test_verifier_reward_func_shuffled_control_permutes_rewards():
    rewards = [1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0]
    plain = verifier_reward_func(False, 0)([None] * 8, [None] * 8, rsr_reward=rewards)
    assert plain == rewards
    shuffled = verifier_reward_func(True, 0)
    runs = [shuffled([None] * 8, [None] * 8, rsr_reward=rewards) for _ in range(5)]
    assert all(sorted(r) == sorted(rewards) for r in runs)
    assert any(r != rewards for r in runs)


def test_rl_config_rejects_unknown_keys_naming_the_field(tmp_path: Path):
    path = tmp_path / "rl.yaml"
    path.write_text("name: x\nmodel: m\nsuite: {name: core}\noutput_dir: out\n"
                    "grpo: {learning_rat: 0.1}\n")
    with pytest.raises(RLConfigError, match=r"rl.yaml.*grpo.learning_rat"):
        load_rl_config(path)
    path.write_text("name: x\nmodel: m\nsuite: {name: core}\noutput_dir: out\n"
                    "harness: {args: {temperature: 0.2}}\n")
    with pytest.raises(RLConfigError, match="temperature"):
        load_rl_config(path)


def test_example_rl_config_loads():
    cfg = load_rl_config(Path(__file__).resolve().parents[2] / "examples" / "rl-tiny.yaml")
    assert cfg.integrity == "strict" and cfg.grpo.num_generations >= 2


def test_policy_server_answers_with_engine_token_ids_and_takes_pushed_weights(
        tiny: tuple[Any, Any, Path]):
    import copy

    import torch

    from rsr.rl.engine import policy_state_dict
    from rsr.rl.policy_server import PolicyServer

    model, tok, _ = tiny
    trained = copy.deepcopy(model)
    with PolicyServer(copy.deepcopy(model), tok, max_new_tokens=8) as server:
        body = {"model": "policy", "messages": [{"role": "user", "content": "ls"}],
                "temperature": 1.0, "logprobs": True, "return_token_ids": True}
        req = urllib.request.Request(server.base_url + "/chat/completions",
                                     data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        reply = json.loads(urllib.request.urlopen(req, timeout=30).read())
        found = engine_tokens(reply)
        assert found is not None
        assert found["prompt_ids"] == server.generated[-1]["prompt_ids"]
        assert found["completion_ids"] == server.generated[-1]["completion_ids"]
        # The logprobs are the model's own for the sampled tokens (what TRL recomputes).
        ids = torch.tensor([found["prompt_ids"] + found["completion_ids"]])
        with torch.no_grad():
            logits = model(input_ids=ids).logits[0, len(found["prompt_ids"]) - 1:-1]
        mine = torch.log_softmax(logits, -1).gather(
            1, torch.tensor(found["completion_ids"])[:, None])[:, 0]
        assert torch.allclose(mine, torch.tensor(found["logprobs"]), atol=1e-4)
        # A push replaces the served weights.
        with torch.no_grad():
            for p in trained.parameters():
                p.add_(0.5)
        server.load_weights(policy_state_dict(trained))
        assert server.weights_version == 1
        for name, t in server.model.state_dict().items():
            assert torch.equal(t, trained.state_dict()[name]), name


def test_policy_state_dict_merges_lora_under_base_names(tiny: tuple[Any, Any, Path]):
    import copy

    import peft
    import torch

    from rsr.rl.engine import policy_state_dict

    model, _, _ = tiny
    lora = peft.get_peft_model(copy.deepcopy(model), peft.LoraConfig(
        r=4, lora_alpha=8, target_modules=["q_proj"], task_type="CAUSAL_LM"))
    for name, p in lora.named_parameters():
        if "lora_B" in name:
            torch.nn.init.normal_(p, std=0.5)
    merged = policy_state_dict(lora)
    assert set(merged) == set(model.state_dict())
    q = "model.layers.0.self_attn.q_proj.weight"
    assert not torch.equal(merged[q], model.state_dict()[q])
    ids = torch.tensor([[1, 2, 3, 4]])
    served = copy.deepcopy(model)
    served.load_state_dict(merged)
    with torch.no_grad():
        assert torch.allclose(served(input_ids=ids).logits, lora(input_ids=ids).logits, atol=1e-5)
