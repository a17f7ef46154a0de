"""rsr rl end to end: TRL's GRPOTrainer, rollouts through inspect eval + rsr/terminus2 in real
rsr-docker sandboxes against vLLM (started by rsr, weights reloaded before each step), the
verifier's reward; and the group advantages TRL computes from our rewards (scripted rollouts
on rsr's policy server: the engine there only receives the weight pushes, and a vLLM start
would cost ~35 s for nothing the end-to-end test does not check)."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from rsr.harness.tokens import TokenCall
from rsr.rl.config import RLConfig
from rsr.rl.rollout import Rollout

pytest.importorskip("trl")
TINY_TASKS = Path(__file__).resolve().parents[2] / "tasks" / "rl-tiny"


CPU_ENGINE = {"kind": "cpu", "max_new_tokens": 12}
# rsr starts vLLM for the run; eager mode halves its start-up here.
VLLM_ENGINE = {"kind": "vllm", "enforce_eager": True, "max_new_tokens": 12}


def config(model: Path, out: Path, engine: dict[str, Any] | None = None, **grpo: Any) -> RLConfig:
    return RLConfig.model_validate({
        "name": "rl-test", "model": str(model),
        "suite": {"name": "rl-tiny", "path": str(TINY_TASKS), "tasks": ["touch-done"]},
        "harness": {"args": {"wait_mode": "adaptive", "max_episodes": 1}},
        "concurrency": 2,
        "grpo": {"learning_rate": 1e-3, "max_steps": 2, "tasks_per_step": 1,
                 "num_generations": 2, "max_completion_length": 64, "precision": "fp32",
                 "save_steps": 1, "use_cpu": True, **grpo},
        "engine": engine or CPU_ENGINE,
        "output_dir": str(out)})


def capture(batches: list[dict[str, Any]], engines: list[Any], at_step: Any = None) -> Any:
    """A trainer hook keeping every batch handed to TRL's loss; `at_step(trainer, engine,
    batch)` runs after each step's generation, before its update (the engine still holds the
    weights it generated with)."""
    def hook(trainer: Any, engine: Any) -> None:
        engines.append(engine)
        inner = trainer._generate_and_score_completions

        def spy(inputs: Any) -> Any:
            out = inner(inputs)
            batches.append({k: v.detach().clone() if hasattr(v, "detach") else v
                            for k, v in out.items()})
            if at_step is not None:
                at_step(trainer, engine, batches[-1])
            return out

        trainer._generate_and_score_completions = spy

    return hook


def unpadded(batch: dict[str, Any], i: int) -> tuple[list[int], list[int], list[int]]:
    prompt = batch["prompt_ids"][i][batch["prompt_mask"][i].bool()].tolist()
    keep = batch["completion_mask"][i].bool()
    completion = batch["completion_ids"][i][keep].tolist()
    model_tokens = (batch["tool_mask"][i][keep].tolist() if "tool_mask" in batch
                    else [1] * len(completion))
    return prompt, completion, model_tokens


def engine_logprobs(engine: Any, prompt: list[int], completion: list[int]) -> list[float]:
    """The served model's logprob of each completion token after the prompt, as the engine
    computes it now (prompt_logprobs of the whole sequence)."""
    body = {"model": engine.served_name, "prompt": prompt + completion, "max_tokens": 1,
            "temperature": 0.0, "prompt_logprobs": 0}
    req = urllib.request.Request(engine.base_url + "/completions", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    entries = json.loads(urllib.request.urlopen(req, timeout=60).read())["choices"][0][
        "prompt_logprobs"][len(prompt):]
    return [float(e[str(t)]["logprob"]) for t, e in zip(completion, entries, strict=True)]


def trainer_logprobs(trainer: Any, prompt: list[int], completion: list[int]) -> list[float]:
    import torch

    model = trainer.accelerator.unwrap_model(trainer.model)
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([prompt + completion])).logits[0].float()
    logps = torch.log_softmax(logits[len(prompt) - 1:-1], -1)
    return logps.gather(1, torch.tensor(completion)[:, None])[:, 0].tolist()


def close(a: list[float], b: list[float], tol: float = 2e-3) -> bool:
    return len(a) == len(b) and max(abs(x - y) for x, y in zip(a, b, strict=True)) < tol


def engine_log_requests(log: Path) -> list[tuple[list[int], list[int] | None]]:
    """What vLLM itself logged it was asked and generated (debug level, --enable-log-requests
    --enable-log-outputs): per request, the prompt token ids and the generated token ids (None
    where it logged no output: it does not for a reply with no text)."""
    def ids(text: str) -> list[int]:
        return [int(t) for t in text.split(",") if t.strip()]

    prompts: dict[str, list[int]] = {}
    outputs: dict[str, list[int]] = {}
    for line in log.read_text(errors="replace").splitlines():
        if found := re.search(r"Request (\S+) details: .*prompt_token_ids: \[([\d, ]*)\]", line):
            prompts[found.group(1)] = ids(found.group(2))
        elif found := re.search(r"Generated response (\S+) details: output_token_ids: "
                                r"\[([\d, ]*)\]", line):
            outputs[found.group(1)] = ids(found.group(2))
    return [(p, outputs.get(rid)) for rid, p in prompts.items()]


@pytest.mark.docker
def test_rl_run_trains_on_engine_token_ids_pushes_weights_and_resumes(
        engine_env: object, tiny: tuple[Any, Any, Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch):
    """`rsr rl` on vLLM (started by rsr, eager mode): the records are what the engine
    generated (its own request log; its logprobs re-scored), the trainer's weights reach the
    engine before each step, TRL trains on the records untouched, and a run resumes."""
    from inspect_ai.log import list_eval_logs, read_eval_log

    from rsr.harness.tokens import sample_token_calls
    from rsr.rl import engine as rl_engine
    from rsr.rl.grpo import run
    from rsr.trajectories.export import messages_row

    # The engine's own record of every request: prompt and generated token ids in engine.log.
    monkeypatch.setenv("VLLM_LOGGING_LEVEL", "DEBUG")
    monkeypatch.setattr(rl_engine, "RL_SERVER_ARGS", [*rl_engine.RL_SERVER_ARGS,
                                                      "--enable-log-requests",
                                                      "--enable-log-outputs"])
    _, tok, path = tiny
    out = tmp_path / "run"
    rescored: list[list[tuple[list[float], list[float]]]] = []

    def at_step(trainer: Any, engine: Any, batch: dict[str, Any]) -> None:
        # Every sequence generated so far, as the engine and the trainer score it now.
        seqs = [unpadded(b, i)[:2] for b in batches for i in range(len(b["prompt_ids"]))]
        rescored.append([(engine_logprobs(engine, p, c), trainer_logprobs(trainer, p, c))
                         for p, c in seqs])

    batches: list[dict[str, Any]] = []
    engines: list[Any] = []
    # No rollout of an untrained policy is rewarded, so the policy gradient is zero: weight
    # decay alone makes step 1's weights differ from the cold start's.
    card = run(config(path, out, VLLM_ENGINE, weight_decay=30.0),
               trainer_hook=capture(batches, engines, at_step))
    assert card.engine == "vllm" and engines[0].server is not None
    assert card.global_steps == 2 and [s.step for s in card.steps] == [0, 1]
    # The trainer's weights went to the engine before each generation.
    assert [s.weights_version for s in card.steps] == [1, 2]
    assert all(s.token_sources.get("engine") == s.rollouts for s in card.steps)
    # An untrained policy solves nothing, and every sample was audited strictly.
    assert card.reward_first == 0.0 and card.integrity_not_clean == 0 and card.errors == 0

    logged = engine_log_requests(out / "engine.log")
    assert len(batches) == 2 and len(rescored) == 2
    records = []
    for step, batch in enumerate(batches):
        logs = list_eval_logs(str(out / "rollouts" / f"step-{step:05d}"))
        log = read_eval_log(logs[0].name)
        samples = sorted(log.samples or [], key=lambda s: int(str(s.id).split("@")[1]))
        assert len(samples) == 2
        for i, smp in enumerate(samples):
            calls: list[TokenCall] = sample_token_calls(smp.store)
            assert len(calls) == 1 and calls[0].source == "engine"
            call = calls[0]
            # engine -> sample record: what vLLM logged it generated, token for token (a
            # reply with no text has no output line; its prompt was logged all the same) ...
            assert (call.prompt_ids, call.completion_ids) in logged or (
                (call.prompt_ids, None) in logged
                and not tok.decode(call.completion_ids, skip_special_tokens=True))
            # ... with the engine's logprobs of those tokens under that step's weights, which
            # are the trainer's own ...
            engine_now, trainer_now = rescored[step][len(records)]
            assert call.logprobs is not None and close(call.logprobs, engine_now)
            assert close(engine_now, trainer_now)
            # ... record -> trained batch: no re-tokenisation on the way.
            prompt, completion, model_tokens = unpadded(batch, i)
            assert prompt == call.prompt_ids
            assert completion == call.completion_ids
            assert all(model_tokens)
            # ... and the records travel with the exported trajectory.
            assert messages_row(smp, log, "log")["token_calls"] == smp.store["rsr_tokens"]
            records.append(call)
    # Step 1's push carried the updated weights: the engine scores step 0's sequences
    # differently from when it generated them (weight decay moves each token's logprob by
    # ~0.01 here), and as the updated trainer does.
    engine_later = [x for e, _ in rescored[1][:2] for x in e]
    assert not close(engine_later, [x for c in records[:2] for x in c.logprobs or []])
    assert close(engine_later, [x for _, t in rescored[1][:2] for x in t])

    # Resume: two checkpoints exist; a longer run continues from the last one (a new engine).
    assert (out / "checkpoints" / "checkpoint-2").is_dir()
    resumed = run(config(path, out, VLLM_ENGINE, max_steps=3, weight_decay=30.0))
    assert resumed.resumed_from and resumed.resumed_from.endswith("checkpoint-2")
    assert resumed.global_steps == 3 and [s.step for s in resumed.steps] == [0, 1, 2]
    assert resumed.steps[2].token_sources.get("engine") == 2 and resumed.errors == 0
    assert (out / "final" / "config.json").is_file()


@pytest.mark.parametrize("shuffle", [False, True])
def test_rl_run_gives_trl_per_group_advantages_of_the_rollout_rewards(
        tiny: tuple[Any, Any, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        shuffle: bool):
    """Rollouts come from the real CPU engine (no sandbox: the reward here is a rule on the
    generated tokens, so that groups have mixed rewards); TRL's advantages must be each
    reward minus its group's mean over the group's std, in our group order; the shuffled
    control hands TRL the same rewards permuted."""
    import torch

    from rsr.rl import grpo

    seen: list[list[Rollout]] = []

    def rollouts(cfg: RLConfig, tasks: list[str], base_url: str, log_dir: Path,
                 max_tokens: int | None = None) -> list[Rollout]:
        import json
        import urllib.request

        out = []
        for i, task in enumerate(tasks):
            body = {"messages": [{"role": "user", "content": f"{task} {i}"}], "temperature": 1.0,
                    "max_tokens": max_tokens, "logprobs": True, "return_token_ids": True}
            req = urllib.request.Request(base_url + "/chat/completions", json.dumps(body).encode(),
                                         {"Content-Type": "application/json"})
            reply = json.loads(urllib.request.urlopen(req, timeout=60).read())
            ids = reply["choices"][0]["token_ids"]
            call = TokenCall(call=0, model="policy", source="engine",
                             prompt_ids=reply["prompt_token_ids"], completion_ids=ids,
                             logprobs=[c["logprob"] for c in reply["choices"][0]["logprobs"]["content"]])
            reward = [1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0][i]  # mixed in both groups
            out.append(Rollout(task, [call], reward, reward, True, "clean"))
        seen.append(out)
        return out

    monkeypatch.setattr(grpo, "run_rollouts", rollouts)
    batches: list[dict[str, Any]] = []
    cfg = config(tiny[2], tmp_path / "adv", max_steps=1, num_generations=4, tasks_per_step=2,
                 save_steps=1000)
    cfg.shuffle_rewards = shuffle
    grpo.run(cfg, trainer_hook=capture(batches, []))
    rewards = torch.tensor([r.reward for r in seen[0]])
    got = batches[0]["advantages"]
    if shuffle:
        # Advantages of a permutation of the rewards: no longer those of the rollouts.
        assert not torch.allclose(got, _group_advantages(rewards), atol=1e-3)
        return
    assert torch.allclose(got, _group_advantages(rewards), atol=1e-4)


def _group_advantages(rewards: Any) -> Any:
    groups = rewards.view(-1, 4)
    mean = groups.mean(dim=1, keepdim=True)
    std = groups.std(dim=1, keepdim=True)
    return ((groups - mean) / (std + 1e-4)).view(-1)
