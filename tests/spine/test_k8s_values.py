"""Helm values for the k8s sandbox, checked against the chart that ships inside
inspect-k8s-sandbox (its `values.schema.json`, with its `values.yaml` merged under ours as
`helm install` does). No Kubernetes cluster exists here: nothing in this file installs a
release or runs a sample on a cluster; it checks what rsr hands to Helm."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from taskfactory import harbor_task, write

from rsr.errors import RsrError
from rsr.sandbox.images import ImageMap, ImageRecord, task_images
from rsr.sandbox.k8s_values import helm_merge, helm_values, write_values_file
from rsr.tasks.load import LoadedTask, load_dataset, load_task

CORE = Path(__file__).resolve().parents[2] / "tasks" / "core"
CHART = Path(str(resources.files("k8s_sandbox"))) / "resources" / "helm" / "agent-env"
REGISTRY = "registry.example.org:5000/rsr"


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RSR_CACHE_DIR", str(tmp_path / "cache"))


def chart_validator() -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(json.loads((CHART / "values.schema.json").read_text()))


def as_helm_sees_it(values: dict[str, Any]) -> dict[str, Any]:
    return helm_merge(yaml.safe_load((CHART / "values.yaml").read_text()), values)


def schema_errors(values: dict[str, Any]) -> list[str]:
    return [f"{'.'.join(map(str, e.absolute_path))}: {e.message}"
            for e in chart_validator().iter_errors(as_helm_sees_it(values))]


def pushed(tasks: list[LoadedTask]) -> ImageMap:
    """An image map as `rsr images build --push` writes it (digests made up: nothing is pushed)."""
    images = ImageMap(registry=REGISTRY)
    for n, task in enumerate(tasks):
        for image in task_images(task):
            repo = image.local.rsplit(":", 1)[0]
            images.add(ImageRecord(task=task.name, service=image.service, local=image.local,
                                   reference=f"{REGISTRY}/{repo}@sha256:{n:064x}"))
    return images


def round_trip(task: LoadedTask, images: ImageMap) -> dict[str, Any]:
    return yaml.safe_load(write_values_file(task, images).read_text())


def multi_container_task(root: Path, name: str = "multi", internet: bool = False) -> LoadedTask:
    toml = f"""
        schema_version = "1.1"
        [task]
        name = "test/{name}"
        [agent]
        timeout_sec = 60
        user = "agent"
        [environment]
        workdir = "/app"
        cpus = 2
        memory_mb = 3072
        storage_mb = 5000
        allow_internet = {str(internet).lower()}
        """
    d = harbor_task(root, name, toml=toml)
    write(d / "environment" / "Dockerfile.api", "FROM debian:bookworm-slim\nCMD [\"sleep\", \"infinity\"]\n")
    write(d / "environment" / "docker-compose.yaml", """
        services:
          main:
            build: .
            container_name: main-box
          my_db:
            build:
              context: .
              dockerfile: Dockerfile.api
            command: ["perl", "-e", "sleep"]
            user: "999:998"
            cpus: 0.5
            mem_limit: 256m
            environment:
              - DB_NAME=ledger
            healthcheck:
              test: ["CMD-SHELL", "test -e /tmp/ready"]
              interval: 2s
              retries: 5
            networks: [inner]
        networks:
          inner: {}
        """)
    return load_task(d)


def test_k8s_values_for_every_core_task_validate_against_the_chart_schema() -> None:
    loaded = load_dataset(CORE)
    assert not loaded.errors and len(loaded.tasks) >= 40
    images = pushed(loaded.tasks)
    for task in loaded.tasks:
        values = round_trip(task, images)
        assert schema_errors(values) == [], task.name
        default = values["services"]["default"]
        assert default["image"].startswith(f"{REGISTRY}/rsr-task/") and "@sha256:" in default["image"]
        assert default["networkIsolated"] is True and values["allowEntities"] == []


def test_k8s_values_schema_check_rejects_what_helm_would_reject(tmp_path: Path) -> None:
    # The check must be able to fail: the same validator refuses values the chart forbids.
    task = load_task(harbor_task(tmp_path, "t"))
    values = helm_values(task, pushed([task])).to_values()
    assert schema_errors(values) == []
    bad = json.loads(json.dumps(values))
    bad["services"]["Default_Service"] = bad["services"]["default"]
    bad["services"]["default"]["cpus"] = 2  # a compose key, not a chart key
    errors = schema_errors(bad)
    assert any("Default_Service" in e for e in errors) and any("cpus" in e for e in errors)


def test_k8s_values_round_trip_keeps_limits_user_workdir_env_and_no_egress(tmp_path: Path) -> None:
    d = harbor_task(tmp_path, "limits", toml="""
        schema_version = "1.1"
        [task]
        name = "test/limits"
        [agent]
        user = "agent"
        [environment]
        allow_internet = false
        workdir = "/srv/work"
        cpus = 1.5
        memory_mb = 3072
        storage_mb = 2048
        env = { MODE = "strict", LEVEL = "${RSR_TEST_UNSET_VAR:-7}" }
        """)
    task = load_task(d)
    images = pushed([task])
    images.images[task_images(task)[0].local].user = "agent"
    values = round_trip(task, images)
    default = values["services"]["default"]
    limits = {"cpu": "1500m", "memory": "3072Mi", "ephemeral-storage": "2048Mi"}
    assert default["resources"] == {"limits": limits, "requests": limits}
    assert default["workingDir"] == "/srv/work"
    assert {e["name"]: e["value"] for e in default["env"]} == {"MODE": "strict", "LEVEL": "7"}
    # Root in the container so the provider's runuser can switch to the agent/verifier user.
    assert default["securityContext"] == {"runAsUser": 0, "runAsGroup": 0}
    assert default["args"] == ["sleep", "infinity"] and default["command"] is None
    assert default["networkIsolated"] is True
    assert values["allowDomains"] == [] and values["allowEntities"] == []
    assert values.get("extraContainers", []) == []

    merged = as_helm_sees_it(values)
    # Helm's merge keeps ours, deletes the chart's default `tail -f` command, and keeps the
    # chart's network policy on: the isolation is enforced, not just declared.
    assert merged["services"]["default"]["resources"]["limits"] == limits
    assert "command" not in merged["services"]["default"]
    assert merged["networkPolicy"] == {"enabled": True}

    from k8s_sandbox import K8sSandboxEnvironmentConfig

    from rsr.suites.sandbox_choice import sandbox_spec

    spec = sandbox_spec(task, "k8s", images)
    assert spec.type == "k8s" and isinstance(spec.config, K8sSandboxEnvironmentConfig)
    assert spec.config.default_user == "agent"  # the image's USER, as `docker exec` uses it
    assert yaml.safe_load(Path(spec.config.values).read_text()) == values


def test_k8s_values_put_offline_sidecars_in_the_isolated_main_pod(tmp_path: Path) -> None:
    task = multi_container_task(tmp_path)
    values = round_trip(task, pushed([task]))
    assert schema_errors(values) == []
    assert list(values["services"]) == ["default"]
    assert values["services"]["default"]["networkIsolated"] is True
    assert values["services"]["default"]["resources"]["limits"]["memory"] == "3072Mi"
    (sidecar,) = values["extraContainers"]
    assert sidecar["name"] == "my-db" and "@sha256:" in sidecar["image"]
    assert sidecar["args"] == ["perl", "-e", "sleep"] and "command" not in sidecar
    assert sidecar["resources"]["limits"] == {"cpu": "500m", "memory": "256Mi"}
    assert sidecar["securityContext"] == {"runAsUser": 999, "runAsGroup": 998}
    assert sidecar["env"] == [{"name": "DB_NAME", "value": "ledger"}]
    assert sidecar["readinessProbe"] == {"exec": {"command": ["sh", "-c", "test -e /tmp/ready"]},
                                         "periodSeconds": 2, "failureThreshold": 6}
    assert values["allowEntities"] == [] and values["allowDomains"] == []


def test_k8s_values_give_internet_tasks_one_pod_per_service_and_world_egress(tmp_path: Path) -> None:
    task = multi_container_task(tmp_path, "online", internet=True)
    values = round_trip(task, pushed([task]))
    assert schema_errors(values) == []
    assert set(values["services"]) == {"default", "my-db"}
    db = values["services"]["my-db"]
    assert db["dnsRecord"] is True and db["additionalDnsRecords"] == ["my_db"]
    assert not any(s.get("networkIsolated") for s in values["services"].values())
    assert values["allowEntities"] == ["world"]


def test_k8s_values_refuse_an_image_missing_from_the_registry_map(tmp_path: Path) -> None:
    task = load_task(harbor_task(tmp_path, "unpushed"))
    images = pushed([task])
    images.save(tmp_path / "map.json")
    write(task.paths.environment_dir / "Dockerfile", "FROM debian:bookworm-slim\nRUN true\n")
    changed = load_task(task.paths.task_dir)  # a new build context: a new image tag
    with pytest.raises(RsrError) as err:
        helm_values(changed, images)
    message = str(err.value)
    assert "task unpushed" in message and task_images(changed)[0].local in message
    assert f"rsr images build {task.paths.task_dir} --push {REGISTRY}" in message


def test_k8s_values_take_a_terminal_bench_1_compose_file_without_its_log_mounts(tmp_path: Path) -> None:
    d = tmp_path / "tb1-task"
    write(d / "task.yaml", "instruction: Print hi.\nmax_agent_timeout_sec: 120\n")
    write(d / "Dockerfile", "FROM debian:bookworm-slim\nWORKDIR /app\n")
    write(d / "run-tests.sh", "exit 0\n")
    write(d / "solution.sh", "echo hi\n")
    write(d / "docker-compose.yaml", """
        services:
          client:
            build: {dockerfile: Dockerfile}
            image: ${T_BENCH_TASK_DOCKER_CLIENT_IMAGE_NAME}
            container_name: ${T_BENCH_TASK_DOCKER_CLIENT_CONTAINER_NAME}
            command: ["sh", "-c", "sleep infinity"]
            environment:
              - TEST_DIR=${T_BENCH_TEST_DIR}
            volumes:
              - ${T_BENCH_TASK_LOGS_PATH}:${T_BENCH_CONTAINER_LOGS_PATH}
              - ${T_BENCH_TASK_AGENT_LOGS_PATH}:${T_BENCH_CONTAINER_AGENT_LOGS_PATH}
        """)
    task = load_task(d)
    assert task.format == "terminal-bench-1"
    values = round_trip(task, pushed([task]))
    assert schema_errors(values) == []
    default = values["services"]["default"]
    # A keep-alive command becomes our signal-immune PID 1 (rsr.sandbox.compose).
    assert default["args"] == ["sleep", "infinity"] and "volumes" not in default
    assert default["env"] == [{"name": "TEST_DIR", "value": "/tests"}]
    assert default["networkIsolated"] is (not task.config.environment.allow_internet)


def test_k8s_values_reject_compose_keys_they_cannot_map(tmp_path: Path) -> None:
    d = harbor_task(tmp_path, "vols")
    write(d / "environment" / "docker-compose.yaml", """
        services:
          main:
            build: .
            volumes: ["data:/data"]
        volumes:
          data: {}
        """)
    task = load_task(d)
    with pytest.raises(RsrError, match="volumes have no Kubernetes mapping.*docker sandbox"):
        helm_values(task, pushed([task]))


def test_suite_task_with_sandbox_k8s_gives_every_sample_a_k8s_spec(tmp_path: Path) -> None:
    from rsr.suites.inspect_tasks import core

    loaded = load_dataset(CORE, "hello-world,semver-sort")
    path = pushed(loaded.tasks).save(tmp_path / "map.json")
    task = core(tasks="hello-world,semver-sort", sandbox="k8s", images=str(path))
    specs = [s.sandbox for s in task.dataset]
    assert [s.type for s in specs] == ["k8s", "k8s"]
    assert all(Path(s.config.values).is_file() for s in specs)
    assert core(tasks="hello-world").dataset[0].sandbox.type == "rsr-docker"
    assert core(tasks="hello-world", sandbox="compose").dataset[0].sandbox.type == "docker"
    with pytest.raises(RsrError, match="sandbox='kubernetes'"):
        core(tasks="hello-world", sandbox="kubernetes")


def test_suite_task_with_sandbox_k8s_names_the_fix_when_no_image_map_exists() -> None:
    from rsr.suites.inspect_tasks import core

    with pytest.raises(RsrError, match="rsr images build SUITE\\|PATH --push REGISTRY"):
        core(tasks="hello-world", sandbox="k8s")


def test_factory_sandbox_k8s_reaches_the_discovery_samples_and_keeps_the_run_digest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rsr.factory.config import load_config
    from rsr.factory.discover import build_tasks, load_pool

    text = "output_dir: out\npool: {suites: [core], tasks: [hello-world]}\nmodels: {model: mockllm/model}\n"
    (tmp_path / "docker.yaml").write_text(text)
    (tmp_path / "k8s.yaml").write_text(text + "sandbox: k8s\n")
    on_docker, on_k8s = load_config(tmp_path / "docker.yaml"), load_config(tmp_path / "k8s.yaml")
    assert (on_docker.sandbox, on_k8s.sandbox) == ("docker", "k8s")
    assert on_docker.digest() == on_k8s.digest()  # a run started on Docker may resume on a cluster
    monkeypatch.setenv("RSR_K8S_IMAGES", str(pushed(load_dataset(CORE, "hello-world").tasks)
                                              .save(tmp_path / "map.json")))
    tasks = build_tasks(on_k8s, load_pool(on_k8s), set())
    assert {s.sandbox.type for t in tasks for s in t.dataset} == {"k8s"}
    (tmp_path / "bad.yaml").write_text(text + "sandbox: kubernetes\n")
    with pytest.raises(RsrError, match="sandbox"):
        load_config(tmp_path / "bad.yaml")
