"""Images as Harbor gets them: a task's prebuilt `docker_image` is pulled from a real registry
on loopback (Debian's `docker-registry`) by a real `inspect eval` of rsr-docker under the oracle;
`-T images=force-build` builds the task's Dockerfile instead; `never` and a missing tag end as
errors naming the image and the fix. A Docker Hub-like name (`alexgshaw/...`) is resolved by
the engine itself through the registry mirror that scripts/setup.sh configures on 127.0.0.1:5959.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from docker_needs import unless
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, EvalSample
from taskfactory import harbor_task

from rsr.cli.main import main
from rsr.errors import RsrError
from rsr.harness.oracle import oracle
from rsr.sandbox.compose import image_tag
from rsr.sandbox.images import image_map_path, load_image_map, task_images
from rsr.sandbox.infra import ImageMissingError, ImagePullError
from rsr.sandbox.k8s_values import helm_values
from rsr.sandbox.pull import PullProgress
from rsr.suites.inspect_tasks import harbor
from rsr.tasks.load import load_task

pytestmark = pytest.mark.docker
REGISTRY_BIN = shutil.which("docker-registry") or "/usr/bin/docker-registry"
MIRROR_PORT = 5959  # rsr/sandbox/setup-docker.sh: dockerd --registry-mirror=http://127.0.0.1:5959
HUB_NAME = "alexgshaw/rsr-pulltest:20251031"
PREBUILT = "FROM debian:bookworm-slim\nRUN echo {marker} > /marker\nWORKDIR /app\n"
TOML = """
schema_version = "1.1"
[task]
name = "test/{name}"
[verifier]
timeout_sec = 30
[agent]
timeout_sec = 60
[environment]
workdir = "/app"
docker_image = "{image}"
"""


def _mirror_configured() -> bool:
    mirrors = subprocess.run(["docker", "info", "--format", "{{json .RegistryConfig.Mirrors}}"],
                             capture_output=True, text=True).stdout.strip()
    return any(m.rstrip("/") == f"http://127.0.0.1:{MIRROR_PORT}" for m in json.loads(mirrors or "null") or [])


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _docker(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["docker", *args], capture_output=True, text=True, timeout=300)


def _manifest_digest(host: str, repo: str, tag: str) -> str:
    request = urllib.request.Request(f"http://{host}/v2/{repo}/manifests/{tag}", method="HEAD", headers={
        "Accept": "application/vnd.docker.distribution.manifest.v2+json, "
                  "application/vnd.oci.image.manifest.v1+json"})
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.headers["Docker-Content-Digest"]


def _marker(image_id: str) -> str:
    done = _docker("run", "--rm", "--network", "none", image_id, "cat", "/marker")
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@dataclass
class Runs:
    host: str
    hub: bool
    tasks: Path
    auto: EvalLog
    force: EvalLog
    never: EvalLog
    digests: dict[str, str]

    @staticmethod
    def samples(log: EvalLog) -> dict[str, EvalSample]:
        return {str(s.id): s for s in log.samples or []}


def _push(host: str, repo_tag: str, marker: str, workdir: Path) -> str:
    """Build a one-layer image, push it as HOST/REPO:TAG and drop every local tag of it (so the
    eval must pull it); returns the registry's manifest digest."""
    context = workdir / marker
    context.mkdir()
    (context / "Dockerfile").write_text(PREBUILT.format(marker=marker))
    remote = f"{host}/{repo_tag}"
    for args in (("build", "--network", "host", "-q", "-t", remote, str(context)), ("push", remote),
                 ("rmi", remote)):
        done = _docker(*args)
        assert done.returncode == 0, f"docker {' '.join(args)}: {done.stderr}"
    repo, _, tag = repo_tag.rpartition(":")
    return _manifest_digest(host, repo, tag)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Runs]:
    unless(os.access(REGISTRY_BIN, os.X_OK), "a local registry binary (apt-get install docker-registry)")
    root = tmp_path_factory.mktemp("pull")
    hub = _mirror_configured() and _port_free(MIRROR_PORT)
    port = MIRROR_PORT if hub else _free_port()
    host = f"127.0.0.1:{port}"
    (root / "config.yml").write_text(
        f"version: 0.1\nlog: {{level: error}}\nstorage: {{filesystem: {{rootdirectory: {root}/data}}}}\n"
        f"http: {{addr: '{host}'}}\n")
    proc = subprocess.Popen([REGISTRY_BIN, "serve", str(root / "config.yml")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cleanup: list[str] = []
    try:
        for _ in range(50):
            try:
                urllib.request.urlopen(f"http://{host}/v2/", timeout=1)
                break
            except OSError:
                time.sleep(0.1)
        prebuilt = f"{host}/rsr-test/pulltest:1"
        digests = {prebuilt: _push(host, "rsr-test/pulltest:1", "prebuilt", root)}
        tasks = root / "tasks"
        # Its Dockerfile writes another marker: force-build must run that, auto the pulled image.
        harbor_task(tasks, "pulled", toml=TOML.format(name="pulled", image=prebuilt),
                    dockerfile=PREBUILT.format(marker="dockerfile"))
        missing = harbor_task(tasks, "missing-tag", toml=TOML.format(name="missing-tag",
                                                                      image=f"{host}/rsr-test/pulltest:no-such-tag"))
        (missing / "environment" / "Dockerfile").unlink()  # nothing to fall back on
        harbor_task(tasks, "fallback", toml=TOML.format(name="fallback", image=f"{host}/rsr-test/pulltest:gone"),
                    dockerfile=PREBUILT.format(marker="fallback"))
        # Its own compose file: Inspect's compose provider builds it; the sample still records the image.
        harbor_task(tasks, "composed", dockerfile=PREBUILT.format(marker="composed"),
                    extra={"environment/docker-compose.yaml": "services:\n  main:\n    environment: [X=1]\n"})
        # A separate verifier of a prebuilt task runs in the agent's image: under force-build, the built one.
        separate = TOML.replace('"1.1"', '"1.4"').replace("[verifier]", '[verifier]\nenvironment_mode = "separate"')
        harbor_task(tasks, "separate", toml=separate.format(name="separate", image=prebuilt),
                    dockerfile=PREBUILT.format(marker="dockerfile"),
                    test_sh='[ "$(cat /marker)" = dockerfile ] && echo 1 > /logs/verifier/reward.txt '
                            '|| echo 0 > /logs/verifier/reward.txt\n')
        cleanup += [prebuilt, *(image_tag(load_task(d)) for d in tasks.iterdir())]
        if hub:
            digests[HUB_NAME] = _push(host, HUB_NAME, "hub", root)
            harbor_task(tasks, "hub", toml=TOML.format(name="hub", image=HUB_NAME))
            cleanup.append(HUB_NAME)
        never = root / "never"
        absent = harbor_task(never, "absent", toml=TOML.format(name="absent", image=f"{host}/rsr-test/absent:1"))
        (absent / "environment" / "Dockerfile").unlink()
        harbor_task(never, "composed-never", dockerfile=PREBUILT.format(marker="never-built"),
                    extra={"environment/docker-compose.yaml": "services:\n  main:\n    environment: [X=1]\n"})
        cleanup.append(image_tag(load_task(never / "composed-never")))

        def run(path: Path, images: str, **kw: Any) -> EvalLog:
            return inspect_eval(harbor(path=str(path), images=images, **kw), solver=oracle(), model="mockllm/model",
                                display="none", log_dir=str(root / "logs" / images))[0]

        yield Runs(host=host, hub=hub, tasks=tasks, auto=run(tasks, "auto", exclude="separate"),
                   force=run(tasks, "force-build", tasks="pulled,separate"), never=run(never, "never"), digests=digests)
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        tags = _docker("images", "--format", "{{.Repository}}:{{.Tag}}").stdout.split()
        for image in cleanup + [t for t in tags if t.startswith(f"{host}/")]:
            _docker("rmi", image)


def _image(sample: EvalSample) -> dict[str, Any]:
    return sample.metadata["image"]


def test_pull_runs_a_registry_only_image_and_records_its_digest(runs: Runs) -> None:
    sample = Runs.samples(runs.auto)["pulled"]
    assert sample.error is None and sample.scores["verifier"].value["passed"] == 1
    image = _image(sample)
    prebuilt = f"{runs.host}/rsr-test/pulltest:1"
    assert image["name"] == prebuilt and image["source"] == "pulled" and image["policy"] == "auto"
    assert image["digest"] == runs.digests[prebuilt]
    assert f"{runs.host}/rsr-test/pulltest@{image['digest']}" in image["repo_digests"]
    assert sample.store["rsr:image"]["id"] == image["id"]
    assert _marker(image["id"]) == "prebuilt"  # the registry's image, not the Dockerfile's
    assert runs.auto.eval.task_args.get("images") == "auto"
    assert (runs.auto.eval.metadata or {})["image_policy"] == "auto"


def _infra(sample: Any, kind: str) -> str:
    """The infrastructure error a sample ended with: scored as a failure (never an Inspect error
    that drops out of the headline), its kind and message in the score's metadata."""
    assert sample.error is None
    score = sample.scores["verifier"]
    assert score.value["passed"] == 0 and score.metadata["infra"]["kind"] == kind
    return str(score.metadata["infra"]["message"])


def test_pull_of_a_missing_tag_is_an_infra_error_naming_the_image_and_the_fix(runs: Runs) -> None:
    sample = Runs.samples(runs.auto)["missing-tag"]
    message = _infra(sample, ImagePullError.kind)
    assert f"{runs.host}/rsr-test/pulltest:no-such-tag" in message and "missing-tag" in message
    assert "not found" in message.lower() or "unknown" in message.lower()  # the registry's answer
    assert "docker pull" in message and "docker load" in message


def test_pull_that_fails_falls_back_to_the_dockerfile_under_auto_and_says_so(runs: Runs) -> None:
    sample = Runs.samples(runs.auto)["fallback"]
    assert sample.error is None and sample.scores["verifier"].value["passed"] == 1
    image = _image(sample)
    assert image["source"] == "built" and image["name"] == image_tag(load_task(runs.tasks / "fallback"))
    assert f"pulling image '{runs.host}/rsr-test/pulltest:gone' failed" in image["note"]
    assert _marker(image["id"]) == "fallback"


def test_pull_compose_sample_records_the_image_its_container_ran(runs: Runs) -> None:
    sample = Runs.samples(runs.auto)["composed"]
    assert sample.error is None and sample.scores["verifier"].value["passed"] == 1
    image = _image(sample)
    assert image["source"] == "compose" and image["name"] == image_tag(load_task(runs.tasks / "composed"))
    assert _marker(image["id"]) == "composed"


def test_pull_force_build_builds_the_dockerfile_under_rsrs_tag(runs: Runs) -> None:
    sample = Runs.samples(runs.force)["pulled"]
    assert sample.error is None and sample.scores["verifier"].value["passed"] == 1
    image = _image(sample)
    assert image["source"] == "built" and image["policy"] == "force-build"
    assert image["name"] == image_tag(load_task(runs.tasks / "pulled")) and image["name"].startswith("rsr-task/")
    assert _marker(image["id"]) == "dockerfile"
    assert (runs.force.eval.metadata or {})["image_policy"] == "force-build"
    separate = Runs.samples(runs.force)["separate"]  # its verifier's fresh container: the same built image
    assert separate.error is None and separate.scores["verifier"].value["passed"] == 1


def test_pull_never_refuses_an_absent_image_naming_it_and_the_fix(runs: Runs) -> None:
    sample = Runs.samples(runs.never)["absent"]
    message = _infra(sample, ImageMissingError.kind)
    assert f"{runs.host}/rsr-test/absent:1" in message and "-T images=never" in message
    assert "docker pull" in message and "docker load" in message
    ids = _docker("images", "-q", f"{runs.host}/rsr-test/absent").stdout.strip()
    assert ids == ""  # nothing was pulled


def test_pull_never_builds_nothing_on_the_compose_path(runs: Runs) -> None:
    sample = Runs.samples(runs.never)["composed-never"]
    tag = image_tag(load_task(runs.tasks.parent / "never" / "composed-never"))
    assert sample.error is not None, "the compose file's image was built despite -T images=never"
    assert f"No such image: {tag}" in sample.error.message
    assert _docker("image", "inspect", tag).returncode != 0


def test_pull_resolves_a_docker_hub_name_through_the_engines_mirror(runs: Runs) -> None:
    unless(runs.hub, f"an engine with --registry-mirror=http://127.0.0.1:{MIRROR_PORT} (and that port free)")
    sample = Runs.samples(runs.auto)["hub"]
    assert sample.error is None and sample.scores["verifier"].value["passed"] == 1
    image = _image(sample)
    assert image["name"] == HUB_NAME and image["source"] == "pulled"
    assert image["digest"] == runs.digests[HUB_NAME]
    assert _marker(image["id"]) == "hub"


def test_pull_task_images_map_prebuilt_to_pull_and_force_build_to_rsrs_tag(runs: Runs) -> None:
    task = load_task(runs.tasks / "pulled")
    assert [(i.local, i.built) for i in task_images(task)] == [(f"{runs.host}/rsr-test/pulltest:1", False)]
    assert [(i.local, i.built) for i in task_images(task, force_build=True)] == [(image_tag(task), True)]


def test_pull_progress_prints_a_line_per_layer_change_at_most_every_interval() -> None:
    out = io.StringIO()
    progress = PullProgress("x/y:1", out, interval=3600)
    progress.begin()
    for current in range(0, 100):  # a long download: a hundred progress messages, one state
        progress.feed({"id": "abc", "status": "Downloading", "progressDetail": {"current": current, "total": 100}})
    progress.feed({"id": "def", "status": "Pulling fs layer"})
    progress.flush()
    progress.feed({"id": "abc", "status": "Downloading", "progressDetail": {"current": 100, "total": 100}})
    progress.flush()  # nothing changed state: no new line
    progress.feed({"id": "abc", "status": "Pull complete"})
    progress.flush()
    lines = out.getvalue().splitlines()
    assert [ln.split("] ")[1].split(" (")[0] for ln in lines] == [
        "pulling", "layer abc: Downloading 0.0/0.0 MB", "layer def: Pulling fs layer", "layer abc: Pull complete"]



def test_pull_images_build_pulls_a_prebuilt_image_and_force_build_maps_the_dockerfile(
        runs: Runs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("RSR_CACHE_DIR", str(tmp_path / "cache"))
    prebuilt = f"{runs.host}/rsr-test/pulltest:1"
    _docker("rmi", prebuilt)  # as on a fresh machine: `rsr images` must pull it, not fail
    push = f"{runs.host}/mirror"
    assert main(["images", "build", str(runs.tasks), "-t", "pulled", "--push", push]) == 0
    assert "[pull " in capsys.readouterr().err
    record = load_image_map(image_map_path(push)).images[prebuilt]
    assert not record.built and record.reference.startswith(f"{push}/rsr-test/pulltest@sha256:")
    task = load_task(runs.tasks / "pulled")
    assert helm_values(task, load_image_map(image_map_path(push))).services["default"].image == record.reference

    assert main(["images", "build", str(runs.tasks), "-t", "pulled", "--push", push, "--force-build"]) == 0
    images = load_image_map(image_map_path(push))
    built = images.images[image_tag(task)]
    assert built.built and built.reference.startswith(f"{push}/rsr-task/pulled@sha256:")
    assert helm_values(task, images, force_build=True).services["default"].image == built.reference
    assert "-T images=force-build" in capsys.readouterr().out


def test_pull_policy_option_rejects_an_unknown_policy_for_the_docker_sandbox(tmp_path: Path) -> None:
    harbor_task(tmp_path, "solo")
    with pytest.raises(RsrError, match=r"-T images='forcebuild': expected one of auto, force-build, never"):
        harbor(path=str(tmp_path), images="forcebuild")
