"""`rsr serve`: the vLLM command line and eval settings for a checkpoint trained here (the
tiny recipe, on CPU). vLLM itself needs a GPU and is not installed here: these tests check the
generated command and config against the checkpoint, not a running server."""

from __future__ import annotations

import json
import shlex
import shutil
from pathlib import Path
from typing import Any

import pytest

from rsr.cli.main import main
from rsr.errors import RsrError
from rsr.training.serve import choose_tensor_parallel, count_parameters, plan_serving

pytest.importorskip("trl")


def flags(command: list[str]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for i, arg in enumerate(command):
        if arg.startswith("--"):
            nxt = command[i + 1] if i + 1 < len(command) else None
            out[arg] = None if nxt is None or nxt.startswith("--") else nxt
    return out


def test_serve_plan_takes_template_context_and_eos_from_the_trained_checkpoint(
        full_run: tuple[Path, Any], capsys: pytest.CaptureFixture[str]) -> None:
    from transformers import AutoModelForCausalLM

    from rsr.training.render import load_chat_template

    run_dir, card = full_run
    assert main(["serve", str(run_dir), "--plan", "--gpus", "1", "--port", "8123"]) == 0
    out = capsys.readouterr().out
    vllm_line = next(line for line in out.splitlines() if line.startswith("vllm serve"))
    command = shlex.split(vllm_line)
    assert command[2] == str((run_dir / "final").resolve())
    f = flags(command)
    assert f["--served-model-name"] == card.name
    assert f["--max-model-len"] == str(card.max_length) == "512"  # trained context, not the RoPE limit
    assert Path(f["--chat-template"]).read_text().strip() == load_chat_template(card.chat_template).strip()
    assert f["--tensor-parallel-size"] == "1" and "--data-parallel-size" not in f
    assert json.loads(f["--override-generation-config"]) == {"temperature": 0.7}
    assert (f["--host"], f["--port"]) == ("127.0.0.1", "8123")

    plan = plan_serving(run_dir, gpus=1)
    model = AutoModelForCausalLM.from_pretrained(run_dir / "final")
    assert plan.parameters == sum(p.numel() for p in model.parameters())
    assert plan.eos_token == card.recipe["eos_token"] == "<|im_end|>"

    inspect_line = next(line for line in out.splitlines() if line.startswith("inspect eval"))
    f = flags(shlex.split(inspect_line))
    assert shlex.split(inspect_line)[2] == "rsr/core"
    assert f["--model"] == f"vllm/{card.name}" and f["--model-base-url"] == "http://127.0.0.1:8123/v1"
    assert f["--temperature"] == "0.7"
    table5 = next(line for line in out.splitlines() if "rsr eval table5" in line)
    assert table5.startswith("VLLM_BASE_URL=http://127.0.0.1:8123/v1 rsr eval table5 --model vllm/")


def test_serve_plan_factory_models_section_is_a_valid_factory_config(full_run: tuple[Path, Any]) -> None:
    from inspect_ai.model import get_model

    from rsr.factory.config import ModelsConfig

    plan = plan_serving(full_run[0], gpus=1)
    models = ModelsConfig.model_validate(plan.factory_models())
    for role in ("planner", "critic", "executor"):
        assert models.for_role(role) == plan.inspect_model
    model = get_model(models.model, **models.model_args)  # lazy: no server is started
    assert type(model.api).__name__ == "VLLMAPI" and model.name == plan.served_model_name


def test_serve_plan_rejects_a_checkpoint_whose_chat_template_differs(
        full_run: tuple[Path, Any], tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(full_run[0] / "final", run / "final")
    shutil.copy(full_run[0] / "run_card.json", run / "run_card.json")
    (run / "final" / "chat_template.jinja").write_text("{{ messages }}")
    with pytest.raises(RsrError, match="differs from the training template 'rsr-chatml-v1'"):
        plan_serving(run)
    (run / "final" / "chat_template.jinja").unlink()
    with pytest.raises(RsrError, match="no chat_template.jinja"):
        plan_serving(run)


def test_serve_plan_refuses_a_lora_adapter_and_names_the_merge(tmp_path: Path) -> None:
    final = tmp_path / "lora-run" / "final"
    final.mkdir(parents=True)
    (final / "adapter_config.json").write_text("{}")
    with pytest.raises(RsrError, match=r"rsr train merge .*lora-run --out .*lora-run-merged"):
        plan_serving(tmp_path / "lora-run" / "final")


def test_tensor_parallel_for_27b_weights_fits_half_of_each_gpu() -> None:
    params, heads = 27_000_000_000, 40  # 54 GB of bf16 weights
    assert choose_tensor_parallel(params, heads, gpus=8, gpu_memory_gb=80) == 2   # H100 80 GB
    assert choose_tensor_parallel(params, heads, gpus=8, gpu_memory_gb=141) == 1  # H200
    assert choose_tensor_parallel(params, heads, gpus=8, gpu_memory_gb=40) == 4   # A100 40 GB
    assert choose_tensor_parallel(params, 24, gpus=8, gpu_memory_gb=16) == 8
    with pytest.raises(RsrError, match="do not fit 2 GPU"):
        choose_tensor_parallel(params, heads, gpus=2, gpu_memory_gb=40)


def test_serve_plan_splits_gpus_into_data_parallel_replicas(full_run: tuple[Path, Any]) -> None:
    plan = plan_serving(full_run[0], gpus=8, tensor_parallel_size=2, max_num_seqs=32)
    f = flags(plan.vllm_command())
    assert (f["--tensor-parallel-size"], f["--data-parallel-size"]) == ("2", "4")
    assert plan.concurrency() == 128  # requests in flight that fill all four replicas
    assert count_parameters(plan.checkpoint) == plan.parameters
