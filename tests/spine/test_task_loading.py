"""Task loading: Harbor schema variants, real-corpus quirks, TB1 migration, and errors that name
file and field. No Docker."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from taskfactory import harbor_task, write

from rsr.cli.main import main
from rsr.errors import DatasetLoadError, TaskFormatError
from rsr.tasks.load import find_task_dirs, load_dataset, load_task

REPO = Path(__file__).resolve().parents[2]


def test_load_task_reads_hello_world_exactly_as_specified() -> None:
    task = load_task(REPO / "tasks/core/hello-world")
    assert task.instruction == "Create a file /app/hello.txt that contains the line: Hello, world!"
    assert task.workdir == "/app"
    assert task.format == "harbor"
    assert task.digest.startswith("sha256:")


@pytest.mark.parametrize("version_line", ['schema_version = "1.0"', 'schema_version = "1.1"',
                                          'schema_version = "1.2"', 'version = "1.0"'])
def test_load_task_accepts_every_schema_version(tmp_path: Path, version_line: str) -> None:
    d = harbor_task(tmp_path, "v", toml=f"{version_line}\n[environment]\nworkdir = '/app'\n")
    assert load_task(d).config.schema_version in ("1.0", "1.1", "1.2")


def test_load_task_accepts_real_corpus_quirks(tmp_path: Path) -> None:
    d = harbor_task(tmp_path, "quirky", toml="""
        version = "1.0"
        [task]
        name = "org/quirky"
        authors = ["someone"]
        [metadata]
        author_name = "x"
        some_future_key = {nested = true}
        [verifier]
        timeout_sec = 600
        [verifier.env]
        [agent]
        timeout_sec = 900.0
        [environment]
        cpus = 2.0
        memory = "4G"
        storage = "10G"
        allow_internet = false
        docker_image = "ghcr.io/example/prebuilt:1"
        brand_new_option = 3
        [solution.env]
        """, extra={"tests/__pycache__/test.cpython-311.pyc": "junk", "tests/.pytest_cache/x": "junk"})
    (d / "environment" / "Dockerfile").unlink()
    task = load_task(d)
    env = task.config.environment
    assert (env.cpus, env.memory_mb, env.storage_mb) == (2.0, 4096, 10240)
    assert env.docker_image == "ghcr.io/example/prebuilt:1"
    assert task.config.verifier.env == {}
    assert any("environment.brand_new_option" in w for w in task.warnings)
    assert all("__pycache__" not in p and ".pytest_cache" not in p for p in task.test_files())


def test_load_task_names_file_and_field_of_a_bad_value(tmp_path: Path) -> None:
    d = harbor_task(tmp_path, "bad", toml='schema_version = "1.1"\n[agent]\ntimeout_sec = "soon"\n')
    with pytest.raises(TaskFormatError, match=r"task\.toml: agent\.timeout_sec") as info:
        load_task(d)
    assert info.value.path.endswith("bad/task.toml") and info.value.field == "agent.timeout_sec"


def test_load_task_rejects_a_malformed_schema_version(tmp_path: Path) -> None:
    d = harbor_task(tmp_path, "garbled", toml='schema_version = "one point oh"\n')
    with pytest.raises(TaskFormatError, match="schema_version: .*not a schema version"):
        load_task(d)


def test_load_task_reads_a_newer_published_schema_with_warnings(tmp_path: Path) -> None:
    # Shapes seen in published corpora: version 2.0, [verifier.environment], network_mode,
    # mcp_servers, os, [[task.authors]] tables.
    d = harbor_task(tmp_path, "newer", toml="""
        version = "2.0"
        [[task.authors]]
        name = "someone"
        email = "someone@example.com"
        [metadata]
        difficulty = "hard"
        number_of_milestones = 0
        [verifier]
        environment_mode = "separate"
        timeout_sec = 1800.0
        [verifier.env]
        [verifier.environment]
        cpus = 2
        [agent]
        timeout_sec = 5400.0
        network_mode = "public"
        [environment]
        build_timeout_sec = 1800.0
        os = "linux"
        network_mode = "public"
        cpus = 2
        memory_mb = 8192
        gpus = 0
        mcp_servers = []
        """)
    task = load_task(d)
    assert task.config.schema_version == "2.0" and task.config.environment.allow_internet is True
    assert task.config.task.authors[0].email == "someone@example.com"
    assert any("newer than the ones modelled" in w for w in task.warnings)
    assert task.config.verifier.mode == "separate" and task.config.verifier.environment.cpus == 2
    assert not [w for w in task.warnings if "unknown key '" in w]


def test_load_task_rejects_invalid_toml_with_its_path(tmp_path: Path) -> None:
    d = harbor_task(tmp_path, "broken", toml="[task\nname=")
    with pytest.raises(TaskFormatError, match=r"broken/task\.toml: invalid TOML"):
        load_task(d)


def test_load_task_migrates_terminal_bench_1_layout(tmp_path: Path) -> None:
    d = tmp_path / "tb1-task"
    write(d / "task.yaml", """
        instruction: Print hi.
        difficulty: medium
        category: software-engineering
        tags: [a, b]
        parser_name: pytest
        max_agent_timeout_sec: 120
        max_test_timeout_sec: 30.0
        """)
    write(d / "Dockerfile", "FROM debian:bookworm-slim\n")
    write(d / "run-tests.sh", "exit 0\n")
    write(d / "solution.yaml", "- command: echo hi > /tmp/hi\n- command: cat /tmp/hi\n")
    write(d / "tests" / "test_outputs.py", "def test_x():\n    pass\n")
    task = load_task(d)
    assert task.format == "terminal-bench-1"
    assert task.config.agent.timeout_sec == 120 and task.config.verifier.timeout_sec == 30
    assert task.config.difficulty == "medium" and task.config.category == "software-engineering"
    assert "/tests/run-tests.sh" in task.test_files()
    assert b"echo hi > /tmp/hi" in task.solution_files()["/solution/solve.sh"]


def test_load_task_rejects_tb1_solution_yaml_without_command(tmp_path: Path) -> None:
    d = tmp_path / "tb1-bad"
    write(d / "task.yaml", "instruction: x\n")
    write(d / "Dockerfile", "FROM debian:bookworm-slim\n")
    write(d / "run-tests.sh", "exit 0\n")
    write(d / "solution.yaml", "- cmd: oops\n")
    with pytest.raises(TaskFormatError, match=r"solution\.yaml: \[0\]\.command"):
        load_task(d)


def test_load_dataset_reports_every_bad_task_not_only_the_first(tmp_path: Path) -> None:
    harbor_task(tmp_path, "good")
    harbor_task(tmp_path, "bad-one", toml='[environment]\ncpus = "many"\n')
    harbor_task(tmp_path, "bad-two", toml='[verifier]\ntimeout_sec = [1]\n')
    (harbor_task(tmp_path, "bad-three") / "instruction.md").unlink()
    result = load_dataset(tmp_path)
    assert [t.name for t in result.tasks] == ["good"]
    failing = sorted(Path(e.path).parent.name for e in result.errors)
    assert failing == ["bad-one", "bad-three", "bad-two"]
    with pytest.raises(DatasetLoadError, match="3 invalid task"):
        raise DatasetLoadError(result.errors)


def test_load_dataset_filters_with_include_and_exclude_globs(tmp_path: Path) -> None:
    for n in ("alpha-1", "alpha-2", "beta-1"):
        harbor_task(tmp_path, n)
    assert [t.name for t in load_dataset(tmp_path, tasks="alpha-*").tasks] == ["alpha-1", "alpha-2"]
    assert [t.name for t in load_dataset(tmp_path, exclude="alpha-2,beta*").tasks] == ["alpha-1"]


def test_load_dataset_checks_pinned_digests_in_dataset_toml(tmp_path: Path) -> None:
    good = load_task(harbor_task(tmp_path, "pinned"))
    write(tmp_path / "dataset.toml", f"""
        [dataset]
        name = "mini"
        [[tasks]]
        name = "test/pinned"
        digest = "{good.digest}"
        [[tasks]]
        name = "test/missing"
        """)
    result = load_dataset(tmp_path)
    assert [e.field for e in result.errors] == ["tasks[1].name"]
    (tmp_path / "pinned" / "instruction.md").write_text("changed\n")
    assert "tasks[0].digest" in [e.field for e in load_dataset(tmp_path).errors]


def test_find_task_dirs_does_not_descend_into_tasks(tmp_path: Path) -> None:
    outer = harbor_task(tmp_path, "outer")
    harbor_task(outer / "tests", "nested-fixture")
    assert find_task_dirs(tmp_path) == [outer]


def test_lint_json_lists_every_task_with_status_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    harbor_task(tmp_path, "fine")
    harbor_task(tmp_path, "wrong", toml='[environment]\nmemory_mb = "lots"\n')
    rc = main(["tasks", "lint", str(tmp_path), "--json"])
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rc == 1
    assert rows["fine"]["status"] == "ok" and rows["fine"]["format"] == "harbor"
    assert rows["wrong"]["status"] == "invalid"
    assert rows["wrong"]["errors"][0]["field"] == "environment.memory_mb"
    assert rows["wrong"]["errors"][0]["file"].endswith("wrong/task.toml")


def test_lint_exits_zero_on_the_core_suite(capsys: pytest.CaptureFixture) -> None:
    assert main(["tasks", "lint", str(REPO / "tasks/core")]) == 0


def test_tasks_new_scaffold_passes_lint(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["tasks", "new", "my-task", "--root", str(tmp_path), "--milestones"]) == 0
    task = load_task(tmp_path / "my-task")
    assert task.config.milestones == ["counted", "reported"]
    assert main(["tasks", "lint", str(tmp_path)]) == 0


def test_core_readme_table_is_up_to_date(capsys: pytest.CaptureFixture) -> None:
    assert main(["tasks", "catalog", str(REPO / "tasks/core"), "--check"]) == 0


def test_load_task_defaults_allow_internet_to_true_like_harbor(tmp_path: Path) -> None:
    d = harbor_task(tmp_path, "tb2-like", toml='schema_version = "1.0"\n[environment]\ncpus = 1\n')
    assert load_task(d).config.environment.allow_internet is True
    offline = harbor_task(tmp_path, "offline", toml='[environment]\nallow_internet = false\n')
    assert load_task(offline).config.environment.allow_internet is False
    # An explicit network_mode wins over the legacy flag, as in Harbor.
    both = harbor_task(tmp_path, "both", toml='[environment]\nallow_internet = true\nnetwork_mode = "no-network"\n')
    assert load_task(both).config.environment.allow_internet is False


def test_every_core_task_says_allow_internet_explicitly() -> None:
    for toml in sorted((REPO / "tasks/core").glob("*/task.toml")):
        assert "\nallow_internet = false\n" in toml.read_text(), toml


@pytest.mark.parametrize(("section", "key", "value"), [
    ("verifier", "timeout_sec", "0"), ("agent", "timeout_sec", "-5"), ("environment", "build_timeout_sec", "0"),
    ("environment", "cpus", "0"), ("environment", "cpus", "-1.5"), ("environment", "memory_mb", "0"),
    ("environment", "memory", '"-2G"'), ("environment", "storage_mb", "-1"), ("environment", "gpus", "-1"),
])
def test_load_task_rejects_nonpositive_limits_naming_file_and_field(tmp_path: Path, section: str, key: str,
                                                                     value: str) -> None:
    d = harbor_task(tmp_path, "bad-limit", toml=f"[{section}]\n{key} = {value}\n")
    field = f"{section}.{'memory_mb' if key == 'memory' else key}"
    with pytest.raises(TaskFormatError) as info:
        load_task(d)
    assert info.value.path.endswith("bad-limit/task.toml") and info.value.field == field


def test_load_task_rejects_nonpositive_tb1_timeouts(tmp_path: Path) -> None:
    d = tmp_path / "tb1-bad"
    write(d / "task.yaml", "instruction: do it\nmax_test_timeout_sec: 0\n")
    write(d / "Dockerfile", "FROM debian:bookworm-slim\n")
    write(d / "run-tests.sh", "true\n")
    with pytest.raises(TaskFormatError, match=r"task\.yaml: max_test_timeout_sec: .*must be > 0"):
        load_task(d)


def test_load_task_models_harbor_0_26_fields_without_unknown_key_warnings(tmp_path: Path) -> None:
    d = harbor_task(tmp_path, "modern", toml="""
        schema_version = "1.4"
        source = "registry"
        multi_step_reward_strategy = "final"
        artifacts = ["/app/out.txt", {source = "/var/log/app", service = "db"}]
        [task]
        name = "org/modern"
        version = "2"
        [reward]
        kind = "binary"
        [verifier]
        environment_mode = "shared"
        network_mode = "no-network"
        [[verifier.collect]]
        command = "pg_dump > /logs/artifacts/db.sql"
        service = "db"
        [agent]
        network_mode = "public"
        [environment]
        gpus = 1
        gpu_types = ["H100"]
        skills_dir = "/skills"
        network_mode = "allowlist"
        allowed_hosts = ["pypi.org"]
        [environment.healthcheck]
        command = "true"
        [[environment.mcp_servers]]
        name = "search"
        transport = "stdio"
        command = "mcp-search"
        """)
    task = load_task(d)
    env = task.config.environment
    assert (env.gpus, env.network_mode, env.allow_internet) == (1, "allowlist", False)
    assert env.mcp_servers[0].name == "search" and task.config.artifacts[1].service == "db"
    assert task.config.reward == {"kind": "binary"}
    assert not [w for w in task.warnings if "unknown key" in w or "newer" in w]
    diffs = task.harbor_differences()
    assert not any("environment.mcp_servers (" in x for x in diffs) and any("allowlist" in x for x in diffs)


def test_load_task_does_not_call_an_older_schema_newer(tmp_path: Path) -> None:
    d = harbor_task(tmp_path, "old", toml='schema_version = "0.0"\n')
    assert not [w for w in load_task(d).warnings if "newer" in w]


def test_load_task_rejects_a_stdio_mcp_server_without_command(tmp_path: Path) -> None:
    d = harbor_task(tmp_path, "mcp", toml='[[environment.mcp_servers]]\nname = "x"\ntransport = "stdio"\n')
    with pytest.raises(TaskFormatError, match=r"environment\.mcp_servers\.0.*'command' is required"):
        load_task(d)


def test_load_task_reads_each_step_of_a_multi_step_task(tmp_path: Path) -> None:
    d = harbor_task(tmp_path, "stepped", toml="""
        schema_version = "1.4"
        [[steps]]
        name = "scaffold"
        min_reward = 1.0
        [[steps]]
        name = "finish"
        [steps.verifier]
        timeout_sec = 10
        """, extra={"steps/scaffold/instruction.md": "Make the skeleton.\n",
                    "steps/finish/instruction.md": "Finish it.\n",
                    "steps/finish/tests/test.sh": "echo 1 > /logs/verifier/reward.txt\n"})
    (d / "instruction.md").unlink()
    task = load_task(d)
    assert task.step_instructions == (("scaffold", "Make the skeleton."), ("finish", "Finish it."))
    assert task.instruction == "Make the skeleton." and task.config.steps[1].verifier.timeout_sec == 10
    # rsr runs steps as Harbor does: lint has nothing to say about them.
    assert not any("[[steps]]" in x for x in task.harbor_differences())


def test_load_task_names_the_missing_instruction_of_a_step(tmp_path: Path) -> None:
    d = harbor_task(tmp_path, "stepless", toml='[[steps]]\nname = "one"\n')
    with pytest.raises(TaskFormatError, match=r"steps/one/instruction\.md: missing instruction\.md"):
        load_task(d)


def test_load_task_treats_compose_yml_variants_as_task_data(tmp_path: Path) -> None:
    # In real tasks `compose.yaml` is sometimes the broken file the agent must fix.
    d = harbor_task(tmp_path, "fix-compose", extra={"environment/compose.yaml": "services: {broken: [}\n",
                                                   "environment/docker-compose.yml": "not: compose\n"})
    task = load_task(d)
    assert task.user_compose_file() is None


def test_load_task_strips_leading_canary_lines_from_the_instruction(tmp_path: Path) -> None:
    d = harbor_task(tmp_path, "canary", instruction="<!-- BENCHMARK DATA canary GUID 1234 -->\n\nDo the thing.")
    assert load_task(d).instruction == "Do the thing."


def test_load_task_rejects_an_unknown_tb1_parser_naming_the_field(tmp_path: Path) -> None:
    d = tmp_path / "tb1-parser"
    write(d / "task.yaml", "instruction: do it\nparser_name: nunit\n")
    write(d / "Dockerfile", "FROM debian:bookworm-slim\n")
    write(d / "run-tests.sh", "true\n")
    with pytest.raises(TaskFormatError, match=r"task\.yaml: parser_name: .*unknown Terminal-Bench 1 parser 'nunit'"):
        load_task(d)


def test_load_task_models_tb1_scoring_fields(tmp_path: Path) -> None:
    d = tmp_path / "tb1-swe"
    write(d / "task.yaml", "instruction: fix it\nparser_name: swebench\nrun_tests_in_same_shell: true\n")
    write(d / "Dockerfile", "FROM debian:bookworm-slim\n")
    write(d / "run-tests.sh", "true\n")
    task = load_task(d)
    assert task.parser_name == "swebench" and task.tb1 is not None and task.tb1.run_tests_in_same_shell
    assert any("'swebench' parser" in x for x in task.harbor_differences())
    plain = tmp_path / "tb1-default"
    write(plain / "task.yaml", "instruction: do it\n")
    write(plain / "Dockerfile", "FROM debian:bookworm-slim\n")
    write(plain / "run-tests.sh", "true\n")
    assert load_task(plain).parser_name == "pytest"


def test_lint_shows_network_policy_and_harbor_differences(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    harbor_task(tmp_path, "online", toml='[environment]\ncpus = 1\nmemory_mb = 512\n')
    harbor_task(tmp_path, "sidecar", toml='[environment]\ncpus = 1\nmemory_mb = 512\nskills_dir = "/skills"\n'
                '[agent]\nnetwork_mode = "public"\n')
    assert main(["tasks", "lint", "--json", str(tmp_path)]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert rows["online"]["network"] == "internet" and rows["online"]["harbor_differences"] == []
    # Skills run as under Harbor (listed in the first prompt): no line; the phase network does differ.
    differences = rows["sidecar"]["harbor_differences"]
    assert not any("skills_dir" in x for x in differences)
    assert any("[agent]/[verifier] network_mode" in x for x in differences)
    assert main(["tasks", "lint", "--network", "none", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "net:none" in out and "net:internet" not in out and "differs from Harbor" in out
    steps = harbor_task(tmp_path / "more", "stepped", toml='[agent]\nnetwork_mode = "public"\n'
                        '[environment]\ncpus = 1\nmemory_mb = 512\n[[steps]]\nname = "one"\n',
                        extra={"steps/one/instruction.md": "Go.\n", "steps/one/solution/solve.sh": "true\n"})
    assert main(["tasks", "lint", str(steps)]) == 0
    out = capsys.readouterr().out
    # Brackets of TOML sections survive the terminal's markup, and a step's own solution counts.
    assert "[agent]/[verifier] network_mode" in out and "no reference solution" not in out


def test_load_task_rejects_a_compose_file_that_is_not_one(tmp_path: Path) -> None:
    d = harbor_task(tmp_path, "bad-compose", extra={"environment/docker-compose.yaml": "services: [main]\n"})
    with pytest.raises(TaskFormatError, match=r"docker-compose\.yaml: services: expected a mapping of services"):
        load_task(d)
    broken = harbor_task(tmp_path, "broken-compose", extra={"environment/docker-compose.yaml": "services: {a: [}\n"})
    with pytest.raises(TaskFormatError, match=r"docker-compose\.yaml: invalid YAML"):
        load_task(broken)


@pytest.mark.docker
def test_tasks_new_scaffold_does_pass_the_quality_gate(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    # The README's worked example (the --milestones variant writes reward.json and passed before).
    assert main(["tasks", "new", "word-counts", "--root", str(tmp_path), "--category", "text-processing",
                 "--difficulty", "easy"]) == 0
    rc = main(["tasks", "check", str(tmp_path / "word-counts"), "--runs", "1",
               "--log-dir", str(tmp_path / "logs")])
    out = capsys.readouterr().out
    assert rc == 0, out


def test_load_task_does_name_the_key_an_unknown_task_toml_key_misspells(tmp_path: Path) -> None:
    import shutil

    d = tmp_path / "hello-world"
    shutil.copytree(REPO / "tasks" / "core" / "hello-world", d)
    toml = d / "task.toml"
    toml.write_text(toml.read_text().replace("[verifier]\n", "[verifier]\ntimeout_secs = 30\n")
                    + "\n[enviroment]\ncpus = 1\n\n[agent.extra]\nzzz = 1\n")
    warnings = load_task(d).warnings
    assert f"{toml}: unknown key 'verifier.timeout_secs' (did you mean 'verifier.timeout_sec'?)" in warnings
    assert f"{toml}: unknown key 'enviroment' (did you mean 'environment'?)" in warnings
    assert f"{toml}: unknown key 'agent.extra'" in warnings  # nothing close: no guess
