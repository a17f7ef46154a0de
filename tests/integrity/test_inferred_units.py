"""The inferred-deliverables plan without Docker: how a reference's change set becomes roots,
what an inferred plan keeps, how records are found, and the live-state verdict's bookkeeping."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rsr.errors import RsrError
from rsr.report.integrity import sample_verdict, summarize
from rsr.verify import inferred
from rsr.verify.deliverables import NoDeliverables, Plan, plan_for, plugin_registration, why_dropped


def record(digest: str = "sha256:abc", **kw: object) -> inferred.InferredTask:
    return inferred.InferredTask(name="t", digest=digest, **kw)  # type: ignore[arg-type]


def test_candidate_roots_does_collapse_created_trees_and_keep_written_files_exact() -> None:
    kept = ["/app/out", "/opt/tool", "/opt/tool/bin", "/opt/tool/bin/x", "/usr/bin/greet", "/etc", "/etc/foo.conf"]
    roots = inferred.candidate_roots(kept, added=["/app/out", "/opt/tool", "/opt/tool/bin", "/opt/tool/bin/x",
                                                  "/usr/bin/greet", "/etc/foo.conf"],
                                     deleted=["/var/old"], directories=["/opt/tool", "/opt/tool/bin", "/etc"],
                                     workdir="/app")
    # a created tree is one root; what else changed (/etc's mode included) is kept exactly
    assert roots == {"/etc": False, "/etc/foo.conf": False, "/opt/tool": True, "/usr/bin/greet": False,
                     "/var/old": False}


def test_exact_path_does_keep_itself_only_and_its_start_up_hook() -> None:
    plan = plan_for("strict", "/app", None, record(exact=["/etc", "/root/.bashrc"]))
    assert why_dropped("/etc", plan) is None and why_dropped("/root/.bashrc", plan) is None
    assert why_dropped("/etc/evil.conf", plan) is not None
    # a deletion runs nothing: the removal of a start-up hook under a root is carried
    tree = plan_for("strict", "/app", None, record(roots=["/etc/profile.d"]))
    assert why_dropped("/etc/profile.d/backdoor.sh", tree, deleted=True) is None
    assert why_dropped("/etc/profile.d/backdoor.sh", tree) is not None


def test_escape_does_make_a_root_match_only_itself() -> None:
    plan = Plan(trust="inferred", roots=["/app", inferred.escape("/srv/a[1]*")])
    assert why_dropped("/srv/a[1]*/f", plan) is None
    assert why_dropped("/srv/a1x", plan) is not None


def test_inferred_plan_does_drop_startup_hooks_and_everything_outside_its_roots() -> None:
    plan = plan_for("strict", "/app", None, record(roots=["/usr/local/lib/python3.11/dist-packages"]))
    assert plan.trust == "inferred" and plan.roots[0] == "/app"
    assert why_dropped("/usr/local/lib/python3.11/dist-packages/pkg/__init__.py", plan) is None
    assert "start-up hook" in (why_dropped("/usr/local/lib/python3.11/dist-packages/x.pth", plan,
                                           content=b"import os\n") or "")
    for stray in ("/root/.local/bin/env", "/usr/local/bin/uvx", "/.pytest.ini", "/etc/apt/apt.conf.d/99zz"):
        assert "inferred from its reference solution" in (why_dropped(stray, plan) or ""), stray


def test_plan_for_rejects_strict_undeclared_task_without_inference() -> None:
    with pytest.raises(NoDeliverables):
        plan_for("strict", "/app", None, None)
    assert plan_for("warn", "/app", None, None).trust == "harbor"
    assert plan_for("strict", "/app", [], None).trust == "deliverables"


def test_plugin_registration_does_see_a_case_folded_dist_info() -> None:
    assert plugin_registration("/site/ZZ-1.0.DIST-INFO/entry_points.txt", b"[pytest11]\nzz = zz\n")


def test_lookup_does_find_a_record_by_digest_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "d.json"
    inferred.write_file(out, [record("sha256:one", roots=["/usr/bin/x"]),
                              record("sha256:two", status="reference-failed")], "mine")
    monkeypatch.setenv(inferred.ENV_FILES, str(out))
    monkeypatch.setenv("RSR_CACHE_DIR", str(tmp_path / "cache"))
    assert inferred.usable("sha256:one").roots == ["/usr/bin/x"]  # type: ignore[union-attr]
    assert inferred.usable("sha256:two") is None and inferred.usable("sha256:three") is None
    message = inferred.refusal(["b"], "tb2", ["sha256:two"])
    assert "rsr tasks infer-deliverables tb2" in message and "does not pass under strict" in message


def test_read_file_rejects_a_malformed_record_naming_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "d.json"
    bad.write_text(json.dumps({"schema_version": 1, "tasks": {"sha256:x": {"name": "t", "digest": "sha256:x",
                                                                           "roots": "/usr"}}}))
    with pytest.raises(RsrError, match=r"d\.json: field tasks\.sha256:x\.roots"):
        inferred.read_file(bad)


def test_summarize_does_count_live_state_apart_from_tampering() -> None:
    live = {"error": "live_state", "integrity": {"mode": "strict", "verdict": "live-state", "survivors": ["x"]}}
    tampered = {"error": "tampered", "integrity": {"mode": "strict", "verdict": "tampered"}}
    assert sample_verdict(live) == "live-state"
    counts = summarize([live, tampered])
    assert (counts.live_state, counts.tampered) == (1, 1)
