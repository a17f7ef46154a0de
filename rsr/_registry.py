"""Inspect AI entry point: importing this module registers every rsr task, agent, scorer, sandbox
and the offline scripted model (`--model rsr-scripted/<role> -M fixture=RULES.yaml`), and makes
a process that used an `hf/` model exit cleanly (rsr.hf_exit)."""

# ruff: noqa: F401
from rsr import hf_exit
from rsr.factory.scripted import scripted
from rsr.harness.null import null
from rsr.harness.oracle import oracle
from rsr.harness.rsrt import rsrt
from rsr.harness.statem import statem
from rsr.harness.terminus2 import terminus2
from rsr.rl.provider import rsr_vllm
from rsr.sandbox.docker_api import RsrDockerSandbox
from rsr.suites.inspect_tasks import core, harbor, lhtb, swr100, tb2, tb2_1, tb3, tb4, tbh
from rsr.verify.scorer import verifier

hf_exit.install()


def _inspect_eval_command() -> bool:
    """Whether this process is the `inspect eval` command line. Inspect prints a banner naming
    every registered hook each time a model is made; rsr's only hook (a disk that filled ends
    `inspect eval` with one line and exit 1) matters there alone, so it is registered there alone
    and every other process (rsr's own commands, scripts calling get_model) stays quiet."""
    import os
    import sys

    program = os.path.basename(sys.argv[0] if sys.argv else "")
    command = sys.argv[1:2]
    return (program == "inspect" or program == "__main__.py") and command in (["eval"], ["eval-set"])


if _inspect_eval_command():
    from rsr.report.disk_hook import DiskFullHook

# What `rsr list` shows and what `rsr eval --agent` suggests from: the user-facing names.
TASKS = {"rsr/core": core, "rsr/harbor": harbor, "rsr/tb2": tb2, "rsr/tb2_1": tb2_1, "rsr/tb3": tb3,
         "rsr/tb4": tb4, "rsr/tbh": tbh, "rsr/swr100": swr100, "rsr/lhtb": lhtb}
HARNESSES = {"rsr/terminus2": terminus2, "rsr/statem": statem, "rsr/rsrt": rsrt, "rsr/oracle": oracle,
             "rsr/null": null}
