"""`rsr serve CKPT`: the vLLM command for a trained checkpoint and the evals that use it."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import typer


def serve(
    checkpoint: Path = typer.Argument(..., help="A `rsr train` run dir, its final/, or a merged checkpoint."),
    gpus: int = typer.Option(8, "--gpus", min=1, help="GPUs on the serving machine."),
    gpu_memory_gb: float = typer.Option(80.0, "--gpu-memory-gb", min=1.0,
                                        help="Memory of one GPU (H100 80, H200 141)."),
    tensor_parallel_size: int | None = typer.Option(None, "--tensor-parallel-size", "--tp", min=1,
                                                    help="Override the computed tensor-parallel size."),
    port: int = typer.Option(8000, "--port", min=1, max=65535),
    host: str = typer.Option("127.0.0.1", "--host", help="Bind address (0.0.0.0 for a cluster service)."),
    name: str | None = typer.Option(None, "--name", help="Served model name (default: the run's name)."),
    max_num_seqs: int = typer.Option(64, "--max-num-seqs", min=1, help="Concurrent sequences per replica."),
    temperature: float = typer.Option(0.7, "--temperature", min=0.0, help="Sampling temperature of the evals."),
    sandbox: str = typer.Option("docker", "--sandbox", help="Sandbox of the printed eval commands."),
    as_json: bool = typer.Option(False, "--json", help="Print the plan as JSON."),
    run: bool = typer.Option(False, "--exec", help="Start `vllm serve` now (needs vLLM and GPUs)."),
) -> None:
    """Print (or --exec) the `vllm serve` command for a checkpoint, with the settings that must
    match training, and the `inspect eval` / `rsr eval table5` / factory settings for it."""
    from rsr.errors import RsrError
    from rsr.training.serve import plan_serving

    plan = plan_serving(checkpoint, gpus=gpus, gpu_memory_gb=gpu_memory_gb, port=port, host=host,
                        name=name, tensor_parallel_size=tensor_parallel_size,
                        max_num_seqs=max_num_seqs, temperature=temperature)
    if as_json:
        typer.echo(plan.model_dump_json(indent=2))
    else:
        typer.echo(plan.render(sandbox=sandbox), nl=False)
    if run:
        command = plan.vllm_command()
        if shutil.which(command[0]) is None:
            raise RsrError("vllm is not installed here: pip install 'rsr[vllm]' on the GPU machine")
        os.execvp(command[0], command)
