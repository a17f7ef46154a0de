"""Artifact entries and unpacking without Docker (collection itself runs in test_harbor_parity.py,
against Harbor's own collection of the same task)."""

from __future__ import annotations

import io
import tarfile
from dataclasses import replace
from pathlib import Path

from taskfactory import harbor_task

from rsr.tasks.load import load_task
from rsr.tasks.models import ArtifactSection
from rsr.verify.artifacts import _excluded, _unpack, entries, host_relative

TOML = """
schema_version = "1.4"
artifacts = ["/app/report.txt"]
[[steps]]
name = "one"
artifacts = [{ source = "/var/log/app", destination = "logs-of-one" }]
[[steps]]
name = "two"
"""


def test_entries_does_put_the_publish_dir_first_and_add_the_steps_own(tmp_path: Path) -> None:
    d = harbor_task(tmp_path, "t", toml=TOML,
                    extra={"steps/one/instruction.md": "1\n", "steps/two/instruction.md": "2\n"})
    task = load_task(d)
    assert [a.source for a in entries(task)] == ["/logs/artifacts", "/app/report.txt"]
    assert [a.source for a in entries(task.for_step(0))] == ["/logs/artifacts", "/app/report.txt", "/var/log/app"]
    declared = task.config.model_copy(update={"artifacts": [ArtifactSection(source="/logs/artifacts/")]})
    task = replace(task, config=declared)
    assert [a.source for a in entries(task)] == ["/logs/artifacts/"]  # declared: not added twice


def test_host_relative_does_follow_harbors_layout() -> None:
    assert str(host_relative(ArtifactSection(source="/var/log/x.log"))) == "var/log/x.log"
    assert str(host_relative(ArtifactSection(source="/app/out", destination="out/"))) == "out"


def test_excluded_does_match_like_tar_exclude() -> None:
    assert _excluded("x.tmp", ["*.tmp"]) and _excluded("deep/dir/x.tmp", ["*.tmp"])
    assert _excluded("cache/a.txt", ["cache"]) and not _excluded("keep.txt", ["*.tmp"])


def _archive(members: dict[str, bytes | None], links: dict[str, str] | None = None) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return buf.getvalue()


def test_unpack_does_place_a_directory_and_drop_links_and_exclusions(tmp_path: Path) -> None:
    archive = _archive({"outdir": None, "outdir/keep.txt": b"keep", "outdir/x.tmp": b"drop"},
                       links={"outdir/secret": "/etc/shadow"})
    assert _unpack(archive, tmp_path / "out", ["*.tmp"]) == 1
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["keep.txt"]


def test_unpack_does_place_a_file_at_its_own_path(tmp_path: Path) -> None:
    assert _unpack(_archive({"report.txt": b"r"}), tmp_path / "app" / "report.txt", []) == 1
    assert (tmp_path / "app" / "report.txt").read_bytes() == b"r"
