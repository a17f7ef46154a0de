"""An agent that ends its own container from inside. PID 1 ignores the signals sent to it from
inside, but the agent runs as root beside it: it can ptrace PID 1 (same uid, Docker's default
seccomp allows ptrace) and make it call exit_group. The container then stops, exit 137, with no
memory kill, like a `docker kill`. Were that counted as infra `sandbox-lost`, the sample would
be retried: an agent that fails could buy itself a second attempt. It must be the agent's own
failure (`sandbox_exited`), scored 0 and not retried, while a `docker kill` of the same kind of
container stays infra (test_container_killed.py), and so does one whose image's entrypoint exits
before any agent ran."""

from __future__ import annotations

import asyncio
import platform
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.agent import as_solver
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import sandbox
from taskfactory import BASE_DOCKERFILE, harbor_task

from rsr.harness.oracle import oracle
from rsr.suites.inspect_tasks import tasks_task

pytestmark = pytest.mark.docker

# perl-base is in debian:bookworm-slim. Attach to PID 1, point it back at the syscall
# instruction it sleeps in with exit_group(137) in its registers (orig_rax -1: no restart),
# detach. x86-64 struct user_regs_struct: rax 10, rdi 14, orig_rax 15, rip 16.
END_PID1 = r"""
use strict;
my $pid = 0 + (shift // 1);  # a number: syscall() passes a string as a pointer
syscall(101, 16, $pid, 0, 0) == 0 or die "attach: $!";
waitpid($pid, 0x40000000) == $pid or die "waitpid: $!";
my $regs = "\0" x 216;
syscall(101, 12, $pid, 0, $regs) == 0 or die "getregs: $!";
my @r = unpack("Q27", $regs);
@r[10, 14, 15] = (231, 137, 0xffffffffffffffff);
$r[16] -= 2;
$regs = pack("Q27", @r);
syscall(101, 13, $pid, 0, $regs) == 0 or die "setregs: $!";
syscall(101, 17, $pid, 0, 0) == 0 or die "detach: $!";
"""

SOLVE = f"""
cat > /tmp/end.pl <<'PERL'
{END_PID1}
PERL
perl /tmp/end.pl 1
sleep 10
echo done > /app/out.txt
"""


@solver
def oracle_or_scripted() -> Solver:
    """The oracle, except for sample `scripted`: an agent that ends PID 1 with one command and
    then runs another, as a harness would (that call finds the container stopped)."""
    run_oracle = as_solver(oracle())

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        if str(state.sample_id) != "scripted":
            return await run_oracle(state, generate)
        await sandbox().exec(["perl", "-e", END_PID1, "1"])
        await asyncio.sleep(1)  # the engine has stopped the container by now
        await sandbox().exec(["sh", "-c", "echo done > /app/out.txt"])
        return state

    return solve


@pytest.fixture(scope="module")
def escape_run(tmp_path_factory: pytest.TempPathFactory) -> Any:
    if platform.machine() != "x86_64":
        pytest.skip("the attack's register layout is x86-64's")
    root = tmp_path_factory.mktemp("pid1")
    harbor_task(root, "escape", solve_sh=SOLVE)
    harbor_task(root, "scripted")
    harbor_task(root, "fast")
    harbor_task(root, "entry-exits", dockerfile=BASE_DOCKERFILE + 'ENTRYPOINT ["sh", "-c", "exit 3", "--"]\n')
    (log,) = inspect_eval(tasks_task("harbor", root, None, None), solver=oracle_or_scripted(),
                          model="mockllm/model", display="none", log_dir=str(root / "logs"), retry_on_error=1)
    return log


def test_an_agent_that_ends_pid1_from_inside_does_fail_as_its_own_and_is_not_retried(escape_run: Any) -> None:
    samples = {str(s.id): s for s in escape_run.samples}
    escape = samples["escape"]
    score = escape.scores["verifier"]
    assert score.value["passed"] == 0
    assert "infra" not in score.metadata, score.metadata
    assert score.metadata.get("error") == "sandbox_exited", score.metadata
    assert "from inside" in (score.explanation or ""), score.explanation
    assert not escape.error_retries and score.metadata.get("attempts", 1) == 1
    assert samples["fast"].scores["verifier"].value["passed"] == 1


def test_a_harness_call_into_a_container_ended_from_inside_does_end_the_sample_as_the_agents(
        escape_run: Any) -> None:
    scripted = next(s for s in escape_run.samples if str(s.id) == "scripted")
    score = scripted.scores["verifier"]
    # The failed call ended the sample at once, as a limit (never an error, which is retried).
    assert scripted.limit is not None and scripted.error is None and not scripted.error_retries
    assert score.value["passed"] == 0 and "infra" not in score.metadata, score.metadata
    assert score.metadata.get("error") == "sandbox_exited", score.metadata
    metrics = {k.removeprefix("rsr/"): m.value for s in escape_run.results.scores if s.name == "passed"
               for k, m in s.metrics.items()}
    assert metrics["infra_errors"] == 1 and metrics["infra_sandbox"] == 1 and metrics["mean"] == 0.25


def test_a_container_that_exits_on_its_own_before_the_agent_does_stay_infra(escape_run: Any) -> None:
    sample = next(s for s in escape_run.samples if str(s.id) == "entry-exits")
    score = sample.scores["verifier"]
    assert score.metadata["infra"]["kind"] == "sandbox", score.metadata
    assert "before the agent ran" in score.metadata["infra"]["message"]
    assert len(sample.error_retries or []) == 1  # retried, as infra is


def test_the_stop_verdict_is_the_agents_only_when_the_stream_saw_the_containers_whole_life() -> None:
    """The rule in rsr.sandbox.stops on real containers: a stream begun after a container started
    (its start no longer in the daemon's history) cannot clear a later exit; one that saw the
    start clears an exit from inside; a `docker kill` is always from outside."""
    import os
    import time

    from rsr.sandbox import engine, stops

    if platform.machine() != "x86_64":
        pytest.skip("the attack's register layout is x86-64's")
    api = engine.api()
    labels = {engine.LABEL_SANDBOX: stops.WATCHED, engine.LABEL_OWNER: str(os.getpid())}

    def started() -> str:
        made = api.create_container("debian:bookworm-slim", ["sleep", "infinity"], labels=labels,
                                    host_config=api.create_host_config(network_mode="none"))
        api.start(made["Id"])
        return str(made["Id"])

    def end_from_inside(container: str) -> None:
        api.exec_start(api.exec_create(container, ["perl", "-e", END_PID1, "1"])["Id"])
        deadline = time.monotonic() + 10
        while api.inspect_container(container)["State"]["Running"]:
            assert time.monotonic() < deadline
            time.sleep(0.05)

    ids: list[str] = []
    try:
        early = started()
        ids.append(early)
        for _ in range(100):  # 300 exec events: the daemon's history (256 events) forgets the start
            api.exec_start(api.exec_create(early, ["true"])["Id"])
        watch = stops.StopWatch(stops._connector(dict(os.environ)))
        assert watch.start(10)
        late, killed = started(), started()
        ids += [late, killed]
        end_from_inside(early)
        end_from_inside(late)
        api.kill(killed)
        assert watch.verdict(early)[0] == "unknown"
        assert watch.verdict(late)[0] == "inside"
        who, why = watch.verdict(killed)
        assert who == "outside" and "kill" in why
        watch.close()
    finally:
        for container in ids:
            api.remove_container(container, force=True)
