"""Factory provenance: a rerun into the same output_dir after changing the models reuses none of
the old models' work, and every row and the dataset card name what produced them (issue 27).

Real Docker sandboxes and verifiers; the models are the factory's scripted provider, whose
fixture here answers for the old roles and for the new ones alike."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest
import yaml
from inspect_ai.log import read_eval_log, read_eval_log_samples

from rsr.cli.main import main

pytestmark = [pytest.mark.docker, pytest.mark.slow]

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _config(tmp_path: Path, name: str, **models: str) -> Path:
    cfg = yaml.safe_load((FIXTURES / "resume.yaml").read_text())
    cfg["execute"]["m"] = 1
    cfg["models"]["model_args"] = {"fixture": str(tmp_path / "fixture.yaml")}
    for role, model in models.items():
        if role == "base":
            cfg["models"]["model"] = model
        else:
            cfg["models"]["roles"][role] = model
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def _runs(log_dir: Path) -> Counter[str]:
    """sample id -> how many finished runs of it the stage's logs hold, per model."""
    runs: Counter[str] = Counter()
    for log in log_dir.glob("*.eval"):
        model = read_eval_log(str(log), header_only=True).eval.model
        for sample in read_eval_log_samples(str(log), all_samples_required=False):
            if sample.error is None and sample.scores:
                runs[f"{model} {sample.id}"] += 1
    return runs


def test_factory_does_rerun_stages_whose_models_changed_and_names_them(tmp_path: Path) -> None:
    fixture = yaml.safe_load((FIXTURES / "resume-fixture.yaml").read_text())
    renamed = [{**rule, "role": rule["role"] + "2"} for rule in fixture["rules"]]
    (tmp_path / "fixture.yaml").write_text(yaml.safe_dump({"rules": fixture["rules"] + renamed}))
    out = tmp_path / "run"
    old = _config(tmp_path, "old")
    assert main(["factory", "run", str(old), "--output-dir", str(out)]) == 0
    new = _config(tmp_path, "new", base="rsr-scripted/base2", executor="rsr-scripted/executor2")
    assert main(["factory", "run", str(new), "--output-dir", str(out)]) == 0

    rollout = "terminus2~hello-world~e1"
    execution = f"{rollout}#k0#m0"
    assert _runs(out / "logs" / "discover") == {f"rsr-scripted/base {rollout}": 1,
                                                f"rsr-scripted/base2 {rollout}": 1}
    # The planner did not change, but it planned from other rollouts: its work is redone too.
    assert sum(_runs(out / "logs" / "plan").values()) == 2
    assert _runs(out / "logs" / "execute") == {f"rsr-scripted/executor {execution}": 1,
                                               f"rsr-scripted/executor2 {execution}": 1}
    rows = [json.loads(x) for x in (out / "dataset.jsonl").read_text().splitlines()]
    assert rows and {r["model"] for r in rows} == {"rsr-scripted/executor2"}
    assert all(read_eval_log(r["log"], header_only=True).eval.model == r["model"] for r in rows)
    baseline = [json.loads(x) for x in (out / "baselines" / "direct-sft.jsonl").read_text().splitlines()]
    assert baseline and {r["model"] for r in baseline} == {"rsr-scripted/base2"}
    card = (out / "DATASET_CARD.md").read_text()
    produced = next(line for line in card.splitlines() if line.startswith("Produced by"))
    assert "rsr-scripted/executor2" in produced and "rsr-scripted/executor," not in produced

    # Unchanged configuration: everything finished is reused, nothing runs again.
    assert main(["factory", "run", str(new), "--output-dir", str(out)]) == 0
    assert sum(_runs(out / "logs" / "execute").values()) == 2
    assert sum(_runs(out / "logs" / "discover").values()) == 2
