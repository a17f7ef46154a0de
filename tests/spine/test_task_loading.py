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
    assert any("environment.mcp_servers" in w for w in task.warnings)


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
