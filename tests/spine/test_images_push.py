"""`rsr images build --push`: real image builds, real pushes to a real registry on loopback
(Debian's `docker-registry` package, the CNCF distribution registry; no image is pulled to
start it), and the image map the k8s values then resolve against. No cluster is involved."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from docker_needs import unless
from taskfactory import harbor_task, write

from rsr.cli.main import main
from rsr.sandbox.images import image_map_path, load_image_map, task_images
from rsr.sandbox.k8s_values import helm_values
from rsr.tasks.load import load_task

pytestmark = pytest.mark.docker
REGISTRY_BIN = shutil.which("docker-registry") or "/usr/bin/docker-registry"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    unless(os.access(REGISTRY_BIN, os.X_OK), "a local registry binary (apt-get install docker-registry)")
    root = tmp_path_factory.mktemp("registry")
    port = _free_port()
    (root / "config.yml").write_text(
        f"version: 0.1\nlog: {{level: error}}\nstorage: {{filesystem: {{rootdirectory: {root}/data}}}}\n"
        f"http: {{addr: '127.0.0.1:{port}'}}\n")
    proc = subprocess.Popen([REGISTRY_BIN, "serve", str(root / "config.yml")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(50):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        yield f"127.0.0.1:{port}/rsr"
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        tags = subprocess.run(["docker", "images", "--format", "{{.Repository}}:{{.Tag}}"],
                              capture_output=True, text=True).stdout.split()
        mine = [t for t in tags if t.startswith(f"127.0.0.1:{port}/")]
        if mine:  # the pushes' registry tags (the images stay under their local tags)
            subprocess.run(["docker", "rmi", *mine], capture_output=True)


@pytest.fixture(autouse=True)
def _cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RSR_CACHE_DIR", str(tmp_path / "cache"))


def manifest_digest(reference: str) -> str:
    host, _, rest = reference.partition("/")
    repo, _, tag = rest.rpartition(":")
    request = urllib.request.Request(f"http://{host}/v2/{repo}/manifests/{tag}", method="HEAD", headers={
        "Accept": "application/vnd.docker.distribution.manifest.v2+json, "
                  "application/vnd.oci.image.manifest.v1+json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers["Docker-Content-Digest"]


def two_tasks(root: Path) -> Path:
    harbor_task(root, "solo", dockerfile="FROM debian:bookworm-slim\nWORKDIR /app\nUSER 1000\n")
    d = harbor_task(root, "duo")
    # Offline, so its sidecar joins the main pod (Harbor's default would give it internet).
    toml = d / "task.toml"
    toml.write_text(toml.read_text().replace("[environment]\n", "[environment]\nallow_internet = false\n"))
    write(d / "environment" / "Dockerfile.side", "FROM debian:bookworm-slim\nRUN echo side > /side\n")
    write(d / "environment" / "docker-compose.yaml", """
        services:
          main: {build: .}
          side: {build: {context: ., dockerfile: Dockerfile.side}, command: ["sleep", "infinity"]}
        """)
    return root


def test_images_build_push_records_digest_pinned_references_the_k8s_values_use(
        tmp_path: Path, registry: str, capsys: pytest.CaptureFixture[str]) -> None:
    root = two_tasks(tmp_path / "tasks")
    assert main(["images", "build", str(root), "--push", registry]) == 0
    images = load_image_map(image_map_path(registry))
    solo, duo = load_task(root / "solo"), load_task(root / "duo")
    wanted = task_images(solo) + task_images(duo)
    assert sorted(images.images) == sorted(i.local for i in wanted)
    for image in wanted:
        record = images.images[image.local]
        name, _, digest = record.reference.partition("@")
        assert name == f"{registry}/{image.local.rsplit(':', 1)[0]}" and digest.startswith("sha256:")
        # The registry serves exactly that manifest under the content tag that was pushed.
        assert manifest_digest(f"{registry}/{image.local}") == digest
    assert images.images[task_images(solo)[0].local].user == "1000"

    values = helm_values(duo, images).to_values()
    assert values["services"]["default"]["image"] == images.images[task_images(duo)[0].local].reference
    assert values["extraContainers"][0]["image"] == images.images[task_images(duo)[1].local].reference

    assert "cannot run on k8s" not in capsys.readouterr().out
    assert main(["images", "build", str(root), "--push", registry]) == 0
    assert capsys.readouterr().out.count("already pushed") == 2


def test_images_build_push_to_an_unreachable_registry_fails_and_records_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    harbor_task(tmp_path / "tasks", "solo")
    registry = f"127.0.0.1:{_free_port()}/rsr"  # nothing listens there
    assert main(["images", "build", str(tmp_path / "tasks"), "--push", registry]) == 1
    out = capsys.readouterr().out
    assert "pushing rsr-task/solo:" in out and "is the registry reachable" in out
    assert "1 task(s) failed: solo" in out
    assert not image_map_path(registry).exists()
    tags = subprocess.run(["docker", "images", "--format", "{{.Repository}}"], capture_output=True,
                          text=True).stdout.split()
    assert not any(t.startswith(registry.split("/")[0]) for t in tags)  # no stray registry tag


def test_images_build_without_push_builds_and_records_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    harbor_task(tmp_path / "tasks", "solo")
    assert main(["images", "build", str(tmp_path / "tasks")]) == 0
    (image,) = task_images(load_task(tmp_path / "tasks" / "solo"))
    assert subprocess.run(["docker", "image", "inspect", image.local], capture_output=True).returncode == 0
    assert "nothing was recorded" in capsys.readouterr().out
    assert not (tmp_path / "cache" / "images").exists()


def test_images_build_push_names_tasks_whose_values_cannot_run_on_k8s(
        tmp_path: Path, registry: str, capsys: pytest.CaptureFixture[str]) -> None:
    d = harbor_task(tmp_path / "tasks", "vols")
    write(d / "environment" / "docker-compose.yaml", """
        services:
          main: {build: ., volumes: ["data:/data"]}
        volumes: {data: {}}
        """)
    assert main(["images", "build", str(tmp_path / "tasks"), "--push", registry]) == 0
    out = capsys.readouterr().out
    assert "vols: pushed, but cannot run on k8s" in out and "volumes have no Kubernetes mapping" in out
    assert "1 task(s) need the docker sandbox: vols" in out
