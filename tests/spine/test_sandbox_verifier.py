"""The verifier and the sandboxes, for real: Docker containers started by Inspect."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.agent import Agent, AgentState, agent
from inspect_ai.solver._task_state import sample_state
from inspect_ai.util import sandbox
from taskfactory import harbor_task, write

from rsr.harness.null import null
from rsr.harness.oracle import oracle
from rsr.suites.inspect_tasks import tasks_task

pytestmark = pytest.mark.docker


def run(root: Path, solver: Agent, tasks: str | None = None, epochs: int = 1,
        log_dir: Path | None = None) -> dict[str, Any]:
    logs = inspect_eval(tasks_task("harbor", root, tasks, None), solver=solver, model="mockllm/model",
                        epochs=epochs, display="none", log_dir=str(log_dir or root / "_logs"))
    assert logs[0].status == "success", logs[0].error
    return {str(s.id): s for s in logs[0].samples or []}


def value(sample: Any) -> dict[str, float]:
    return sample.scores["verifier"].value


def score(sample: Any) -> Any:
    return sample.scores["verifier"]


TOML = """
schema_version = "1.1"
[metadata]
milestones = {milestones}
[verifier]
timeout_sec = {vt}
[agent]
timeout_sec = {at}
[environment]
workdir = "/app"
"""


def toml(vt: int = 30, at: int = 60, milestones: str = "[]") -> str:
    return TOML.format(vt=vt, at=at, milestones=milestones)


@pytest.fixture(scope="module")
def verifier_cases(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("verifier-cases")
    harbor_task(root, "passes")
    harbor_task(root, "times-out", toml=toml(vt=2), test_sh="sleep 30\necho 1 > /logs/verifier/reward.txt\n")
    harbor_task(root, "no-reward", test_sh="echo 'tests ran but wrote nothing'\nexit 0\n")
    harbor_task(root, "crashes", test_sh="echo boom >&2\nexit 3\n")
    harbor_task(root, "malformed", test_sh="echo 'not a number' > /logs/verifier/reward.txt\n")
    harbor_task(root, "milestones", toml=toml(milestones='["parse", "index", "report"]'), test_sh="""
        printf '{"reward": 0, "parse": 1, "index": 1, "report": 0}' > /logs/verifier/reward.json
        """)
    harbor_task(root, "json-plain", test_sh='printf \'{"reward": 1}\' > /logs/verifier/reward.json\n')
    return run(root, oracle())


def test_verifier_passes_a_solved_task(verifier_cases: dict[str, Any]) -> None:
    assert value(verifier_cases["passes"]) == {"passed": 1.0, "reward": 1.0, "process": 1.0}


def test_verifier_timeout_is_a_failed_sample_not_a_crash(verifier_cases: dict[str, Any]) -> None:
    s = verifier_cases["times-out"]
    assert s.error is None and value(s)["passed"] == 0
    assert "timed out after 2s" in score(s).explanation


def test_verifier_missing_reward_file_is_a_failure_with_explanation(verifier_cases: dict[str, Any]) -> None:
    s = verifier_cases["no-reward"]
    assert value(s)["passed"] == 0 and score(s).metadata["error"] == "missing_reward"
    assert "tests ran but wrote nothing" in score(s).explanation


def test_verifier_crashed_test_script_is_a_failure(verifier_cases: dict[str, Any]) -> None:
    s = verifier_cases["crashes"]
    assert value(s)["passed"] == 0 and "crashed" in score(s).explanation and "boom" in score(s).explanation


def test_verifier_malformed_reward_is_a_failure(verifier_cases: dict[str, Any]) -> None:
    s = verifier_cases["malformed"]
    assert value(s)["passed"] == 0 and score(s).metadata["error"] == "malformed_reward"


def test_verifier_process_reward_is_the_fraction_of_milestones(verifier_cases: dict[str, Any]) -> None:
    s = verifier_cases["milestones"]
    assert value(s)["passed"] == 0 and value(s)["process"] == pytest.approx(2 / 3)
    assert score(s).metadata["milestones"] == {"parse": 1.0, "index": 1.0, "report": 0.0}


def test_verifier_reads_reward_json_without_milestones(verifier_cases: dict[str, Any]) -> None:
    assert value(verifier_cases["json-plain"]) == {"passed": 1.0, "reward": 1.0, "process": 1.0}


@agent
def snoop() -> Agent:
    """Records what an agent could see from inside the sandbox."""

    async def execute(state: AgentState) -> AgentState:
        sbx = sandbox()
        ts = sample_state()
        checks = {
            "tests": "test -e /tests && echo present || echo absent",
            "solution": "test -e /solution && echo present || echo absent",
            "ifaces": "ls /sys/class/net | tr '\\n' ' '",
            "egress": "timeout 3 bash -c 'echo > /dev/tcp/1.1.1.1/53' 2>/dev/null && echo open || echo closed",
            "pwd": "pwd",
            "mem": "cat /sys/fs/cgroup/memory.max 2>/dev/null || echo unknown",
            "cpus": "cat /sys/fs/cgroup/cpu.max 2>/dev/null || echo unknown",
            "docker_sock": "test -S /var/run/docker.sock && echo present || echo absent",
        }
        for key, cmd in checks.items():
            r = await sbx.exec(["bash", "-c", cmd])
            ts.metadata[f"seen_{key}"] = r.stdout.strip()
        return state

    return execute


def test_sandbox_hides_tests_and_solution_and_has_no_network(tmp_path: Path) -> None:
    harbor_task(tmp_path, "isolated", toml=toml() + "cpus = 1\nmemory_mb = 512\n")
    s = run(tmp_path, snoop())["isolated"]
    seen = {k.removeprefix("seen_"): v for k, v in s.metadata.items() if k.startswith("seen_")}
    assert seen["tests"] == "absent" and seen["solution"] == "absent"
    assert seen["ifaces"].split() == ["lo"] and seen["egress"] == "closed"
    assert seen["pwd"] == "/app"
    assert seen["docker_sock"] == "absent"
    assert seen["mem"] in (str(512 * 1024 * 1024), "unknown")
    assert value(s)["passed"] == 0  # snooping solved nothing


def test_agent_timeout_is_scored_as_a_failure(tmp_path: Path) -> None:
    harbor_task(tmp_path, "slow-solution", toml=toml(at=2), solve_sh="sleep 20\necho done > /app/out.txt\n")
    s = run(tmp_path, oracle())["slow-solution"]
    assert s.error is None and value(s)["passed"] == 0


def test_null_agent_fails_and_partial_oracle_fails(tmp_path: Path) -> None:
    harbor_task(tmp_path, "two-step", solve_sh="echo do > /app/out.txt\necho ne >> /app/out.txt\n"
                "printf 'done\\n' > /app/out.txt\n", test_sh="""
        mkdir -p /logs/verifier
        if [ "$(cat /app/out.txt 2>/dev/null)" = done ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt
        """)
    assert value(run(tmp_path, null())["two-step"])["passed"] == 0
    assert value(run(tmp_path, oracle(partial=True))["two-step"])["passed"] == 0
    assert value(run(tmp_path, oracle())["two-step"])["passed"] == 1


def test_image_is_built_once_per_task_not_per_sample(tmp_path: Path) -> None:
    harbor_task(tmp_path, "epochs-share-image", dockerfile="FROM debian:bookworm-slim\nWORKDIR /app\n"
                "RUN echo 'unique layer for this test' > /etc/marker-epochs\n")
    samples = run(tmp_path, oracle(), epochs=3)
    assert len(samples) == 1  # keyed by id: three epochs of one task
    out = subprocess.run(["docker", "images", "-q", "rsr-task/epochs-share-image"], capture_output=True, text=True)
    assert len(set(out.stdout.split())) == 1


def test_prebuilt_docker_image_is_used_as_is(tmp_path: Path) -> None:
    d = harbor_task(tmp_path, "prebuilt", toml=toml() + 'docker_image = "debian:bookworm-slim"\n',
                    solve_sh="mkdir -p /app && echo done > /app/out.txt\n")
    (d / "environment" / "Dockerfile").unlink()
    assert value(run(tmp_path, oracle())["prebuilt"])["passed"] == 1


def test_multi_container_task_services_reach_each_other_on_loopback(tmp_path: Path) -> None:
    d = harbor_task(tmp_path, "multi", solve_sh=(
        "for i in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/8080 && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 "
        "&& cat <&3 > /app/resp.txt) 2>/dev/null && break; sleep 0.2; done\n"
        "grep -q 'from api' /app/resp.txt && echo done > /app/out.txt\n"))
    # A tiny perl HTTP responder (perl-base is in every Debian image): no extra packages needed.
    write(d / "environment" / "server.pl", """
        use IO::Socket::INET;
        my $s = IO::Socket::INET->new(LocalAddr => "127.0.0.1:8080", Listen => 5, ReuseAddr => 1) or die;
        while (my $c = $s->accept) { <$c>; print $c "HTTP/1.0 200 OK\\r\\n\\r\\nhello from api\\n"; close $c; }
        """)
    write(d / "environment" / "Dockerfile.api", """
        FROM debian:bookworm-slim
        COPY server.pl /srv/server.pl
        CMD ["perl", "/srv/server.pl"]
        """)
    write(d / "environment" / "docker-compose.yaml", """
        services:
          main:
            build: .
            container_name: main-box
          api:
            build:
              context: .
              dockerfile: Dockerfile.api
            networks: [inner]
        networks:
          inner: {}
        """)
    assert value(run(tmp_path, oracle())["multi"])["passed"] == 1


def test_tests_that_signal_pid_1_cannot_take_the_sandbox_down(tmp_path: Path) -> None:
    harbor_task(tmp_path, "kills-init", test_sh="kill 1; kill -9 1; sleep 1\necho 1 > /logs/verifier/reward.txt\n")
    s = run(tmp_path, null())["kills-init"]
    assert s.error is None and value(s)["passed"] == 1


async def test_verifier_turns_a_vanished_container_into_a_failed_result(tmp_path: Path) -> None:
    from rsr.harness.container import DockerContainerSandbox
    from rsr.tasks.load import load_task
    from rsr.verify.verifier import verify

    task = load_task(harbor_task(tmp_path, "vanishes"))
    cid = subprocess.run(["docker", "run", "-d", "--network", "none", "debian:bookworm-slim", "sleep", "infinity"],
                         capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run(["docker", "rm", "-f", cid], capture_output=True, check=True)
    result = await verify(task, DockerContainerSandbox(cid))
    assert not result.passed and result.error in ("sandbox_error", "setup_failed")
    assert result.explanation


def test_tb1_task_is_scored_by_its_parser_not_by_the_exit_code(tmp_path: Path) -> None:
    from taskfactory import tb1_task

    # run-tests.sh exits 0 whatever pytest said (as many TB1 tasks' scripts do): the summary decides.
    summary = "printf 'test_app.py::test_{a} PASSED\\ntest_app.py::test_{b} {b_status}\\n" \
              "===== short test summary info =====\\n{tail}\\n'; exit 0\n"
    tb1_task(tmp_path, "tb1-resolved", compose=None, yaml_text="instruction: x\nparser_name: pytest\n",
             run_tests=summary.format(a="one", b="two", b_status="PASSED", tail="PASSED test_app.py::test_one\\n"
                                      "PASSED test_app.py::test_two\\n===== 2 passed in 0.01s ====="))
    tb1_task(tmp_path, "tb1-one-failed", compose=None, yaml_text="instruction: x\nparser_name: pytest\n",
             run_tests=summary.format(a="one", b="two", b_status="FAILED", tail="PASSED test_app.py::test_one\\n"
                                      "FAILED test_app.py::test_two - assert 1 == 2\\n"
                                      "===== 1 failed, 1 passed in 0.01s ====="))
    samples = run(tmp_path, oracle())
    assert value(samples["tb1-resolved"])["passed"] == 1, score(samples["tb1-resolved"]).explanation
    failed = score(samples["tb1-one-failed"])
    assert failed.value["passed"] == 0 and failed.metadata["error"] is None, failed.explanation
    assert "pytest parser: not resolved" in failed.explanation


def test_verifier_sees_what_the_agent_left_in_the_images_volumes(tmp_path: Path) -> None:
    # A commit holds only the container's own layer: a VOLUME's data must reach the tests too.
    harbor_task(tmp_path, "image-volume", toml=toml(), dockerfile="FROM debian:bookworm-slim\nWORKDIR /app\n"
                "VOLUME /data\n", solve_sh="echo kept > /data/db\n",
                test_sh='if [ "$(cat /data/db)" = kept ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt\n')
    sample = run(tmp_path, oracle())["image-volume"]
    assert value(sample)["passed"] == 1, score(sample).explanation
