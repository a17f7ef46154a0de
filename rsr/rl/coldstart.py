"""A cold-start policy for the rl-tiny family: SFT of a tiny model on an even mix of commands.

Each task of `tasks/rl-tiny` is solved by one of `CANDIDATES`. Real terminus2 rollouts in
Docker with a scripted model that answers every instruction with each candidate in turn
(then confirms) give the conversations; SFT on them (rsr.training) gives a policy that
answers in the harness's JSON and picks a candidate about uniformly, so its reward starts
near 1/len(CANDIDATES) and only the verifier's reward can tell it which one is right.
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from pathlib import Path
from typing import Any

from rsr.errors import RsrError

REPO = Path(__file__).resolve().parents[2]
TINY_TASKS = REPO / "tasks" / "rl-tiny"
CANDIDATES = ["mkdir /app/out", "touch /app/done", "ls /app", "pwd"]


def reply(command: str | None) -> str:
    commands = [{"keystrokes": command + "\n", "duration": 0.1}] if command else []
    # Short: every token is one a tiny model can get wrong when sampling.
    return json.dumps({"analysis": "", "plan": "", "commands": commands, "task_complete": True})


def scripted_policy(candidates: list[str]) -> Any:
    """A mockllm callable: the n-th first prompt of an instruction gets candidate n (mod
    len), every later prompt (the confirmation) is confirmed."""
    from inspect_ai.model import ModelOutput, ModelUsage

    seen: Counter[str] = Counter()

    def answer(text: str) -> ModelOutput:
        out = ModelOutput.from_content("mockllm/model", text)
        # With usage given, mockllm does not count tokens (its counter needs a download).
        out.usage = ModelUsage(input_tokens=100, output_tokens=20, total_tokens=120)
        return out

    def generate(input: list[Any], tools: Any, tool_choice: Any, config: Any) -> ModelOutput:
        if any(m.role == "assistant" for m in input):
            return answer(reply(None))
        key = input[-1].text.split("Current terminal state")[0]
        command = candidates[seen[key] % len(candidates)]
        seen[key] += 1
        return answer(reply(command))

    return generate


HOSTNAME = re.compile(r"root@[0-9a-f]{12}:")


def with_hostnames(rows: list[dict[str, Any]], copies: int, seed: int) -> list[dict[str, Any]]:
    """Each row again `copies` times with other container hostnames in the prompts: a tiny
    model fitted to a few rows otherwise keys on the hostnames it saw (each sandbox has a
    new one), and its replies fall apart in every real rollout."""
    rng = random.Random(seed)
    out = list(rows)
    for _ in range(copies):
        for row in rows:
            host = "root@" + "".join(rng.choice("0123456789abcdef") for _ in range(12)) + ":"
            out.append({**row, "messages": [
                {**m, "content": HOSTNAME.sub(host, m["content"])} for m in row["messages"]]})
    return out


def collect_rows(out: Path, *, repeats: int = 1, hostname_copies: int = 11,
                 root: Path = TINY_TASKS, concurrency: int = 4, sandbox: str = "docker",
                 seed: int = 0) -> Path:
    """Run the scripted mix through terminus2 on real sandboxes; write the conversations
    (one row per sample, with its task and verifier result, plus hostname variants) as SFT
    JSONL). Only the first exchange is kept: its command is the whole solution (RL runs with
    max_episodes 1, the verifier judges what that command did), and half the tokens halve the
    SFT time on a CPU."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai import task_with
    from inspect_ai.agent import as_solver
    from inspect_ai.dataset import MemoryDataset
    from inspect_ai.model import get_model

    from rsr.harness.terminus2 import terminus2
    from rsr.suites.inspect_tasks import tasks_task

    base = tasks_task("rl-tiny", root, None, None, sandbox=sandbox, integrity="strict")
    samples = [s.model_copy(update={"id": f"{s.id}@{i}"}, deep=True)
               for i in range(repeats * len(CANDIDATES)) for s in base.dataset]
    task = task_with(base, dataset=MemoryDataset(samples, name="rl-tiny"),
                     solver=as_solver(terminus2(wait_mode="adaptive", max_episodes=3)))
    model = get_model("mockllm/model", custom_outputs=scripted_policy(CANDIDATES))
    logs = inspect_eval(task, model=model, max_samples=concurrency, max_sandboxes=concurrency,
                        display="none", log_dir=str(out.parent / "coldstart-logs"),
                        log_format="eval", fail_on_error=False)
    rows = []
    for smp in logs[0].samples or []:
        if smp.error is not None:
            raise RsrError(f"cold-start rollout {smp.id} failed: {smp.error.message}")
        score = next(iter((smp.scores or {}).values()))
        chat = [{"role": m.role, "content": m.text} for m in smp.messages
                if m.role in ("user", "assistant")]
        rows.append({"messages": chat[:2],
                     "task": str((smp.metadata or {}).get("task_name")),
                     "passed": float(score.value["passed"])})  # type: ignore[index]
    rows = with_hostnames(rows, hostname_copies, seed)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return out


def recipe(rows: Path, output_dir: Path, *, epochs: float = 8, seed: int = 0) -> dict[str, Any]:
    """The tiny SFT recipe of the cold start (rsr.training's format)."""
    return {
        "name": "rl-tiny-coldstart",
        "model": {"tiny": {"vocab_size": 1024, "hidden_size": 128, "num_layers": 2,
                           "num_heads": 2, "num_kv_heads": 1, "head_dim": 64,
                           "intermediate_size": 128}},
        "method": "full",
        "data": {"datasets": [{"path": str(rows)}], "max_length": 4096,
                 "mask_check_rows": None, "loss_probe_rows": 8},
        "train": {"learning_rate": 3e-3, "lr_scheduler": "constant", "warmup_ratio": 0.0,
                  "epochs": epochs, "per_device_batch_size": 8, "precision": "fp32",
                  "activation_checkpointing": False, "seed": seed, "logging_steps": 10,
                  "save_steps": 100000, "use_cpu": True, "resume": False},
        "output_dir": str(output_dir),
    }
