"""Rounds configs: bad ones are refused before anything runs, naming the file and the field;
the real-size example is checked like the 27B recipes (parsed and cross-checked, not run)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rsr.errors import RsrError
from rsr.factory.config import load_config as load_factory_config
from rsr.rounds.config import eval_task_dirs, factory_template, load_rounds_config
from rsr.rounds.factory_round import round_factory
from rsr.rounds.serve import Served
from rsr.rounds.train import train_round

ROOT = Path(__file__).resolve().parents[2]
SMOKE = ROOT / "examples" / "rounds-smoke.yaml"


def _variant(tmp_path: Path, **changes: object) -> Path:
    data = yaml.safe_load(SMOKE.read_text())
    for dotted, value in changes.items():
        *parents, leaf = dotted.split("__")
        node = data
        for key in parents:
            node = node[key]
        node[leaf] = value
    # Keep the example's relative paths valid from the temporary folder.
    data["factory"] = str(ROOT / "examples" / "factory-smoke.yaml")
    data["train"]["recipe"] = str(ROOT / "training" / "recipes" / "tiny-rounds-smoke.yaml")
    path = tmp_path / "rounds.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_smoke_config_loads_with_paths_resolved_from_its_folder() -> None:
    cfg = load_rounds_config(SMOKE)
    assert cfg.rounds == 2 and cfg.policy_roles == ["discovery", "executor"]
    assert cfg.factory == (ROOT / "examples" / "factory-smoke.yaml").resolve()
    assert cfg.output_dir == (ROOT / "runs" / "rounds-smoke").resolve()
    assert set(eval_task_dirs(cfg)) == {"semver-sort", "markdown-toc"}


def test_unknown_key_is_refused_naming_file_and_field(tmp_path: Path) -> None:
    path = _variant(tmp_path, train__epochs=3)
    with pytest.raises(RsrError, match=r"rounds\.yaml: train\.epochs: Extra inputs"):
        load_rounds_config(path)


def test_evaluated_task_in_the_factory_pool_is_refused(tmp_path: Path) -> None:
    path = _variant(tmp_path, eval__tasks=["hello-world", "semver-sort"])
    with pytest.raises(RsrError, match=r"eval\.tasks: hello-world also in the pool of .*"
                                       r"factory-smoke\.yaml"):
        load_rounds_config(path)


def test_unknown_eval_task_is_refused(tmp_path: Path) -> None:
    with pytest.raises(RsrError, match=r"eval\.tasks: no-such-task not found in suite 'core'"):
        load_rounds_config(_variant(tmp_path, eval__tasks=["no-such-task"]))


def test_vllm_serving_without_a_base_url_means_rsr_starts_the_engine(tmp_path: Path) -> None:
    cfg = load_rounds_config(_variant(tmp_path, serve={"kind": "vllm"}))
    assert cfg.serve.kind == "vllm" and cfg.serve.base_url is None
    with pytest.raises(RsrError, match=r"serve\.max_model_len: Input should be greater than or equal to 256"):
        load_rounds_config(_variant(tmp_path, serve={"kind": "vllm", "max_model_len": 10}))


def test_training_on_empty_rounds_needs_cumulative_data(tmp_path: Path) -> None:
    with pytest.raises(RsrError, match=r"train: .*on_empty: train needs data: cumulative"):
        load_rounds_config(_variant(tmp_path, train__data="round"))


def test_launch_command_must_name_the_round_config(tmp_path: Path) -> None:
    with pytest.raises(RsrError, match=r"launch: the command must contain \{config\}"):
        load_rounds_config(_variant(tmp_path, train__launch="accelerate launch -m rsr.training"))


def test_missing_recipe_is_named(tmp_path: Path) -> None:
    data = yaml.safe_load(_variant(tmp_path).read_text())
    data["train"]["recipe"] = "nope.yaml"
    path = tmp_path / "rounds.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(RsrError, match=r"rounds\.yaml: train\.recipe: .*nope\.yaml not found"):
        load_rounds_config(path)


def test_round_factory_puts_policy_roles_on_the_served_model_and_guards_eval_tasks(
        tmp_path: Path) -> None:
    cfg = load_rounds_config(SMOKE)
    template = factory_template(cfg)
    evaluated = eval_task_dirs(cfg)
    served = Served("/ckpt", "rounds-smoke-r1", "http://127.0.0.1:1234/v1")
    fc = round_factory(cfg, template, tmp_path / "round-2" / "factory", evaluated, served)
    assert fc.models.model == "rsr-vllm/rounds-smoke-r1"
    assert fc.models.for_role("executor") == "rsr-vllm/rounds-smoke-r1"
    assert fc.models.for_role("planner") == "rsr-scripted/planner"
    assert fc.models.args_for("rsr-vllm/rounds-smoke-r1") == {"base_url": served.base_url}
    assert fc.models.args_for("rsr-scripted/planner") == template.models.model_args
    assert set(evaluated.values()) <= set(fc.export.eval_paths)
    assert template.export.eval_paths[0] in fc.export.eval_paths
    # The serving URL is no part of what the round means: resuming at another port matches.
    other = round_factory(cfg, template, tmp_path / "round-2" / "factory", evaluated,
                          Served("/ckpt", "rounds-smoke-r1", "http://127.0.0.1:9/v1"))
    assert other.digest() == fc.digest()
    # Round 1 without a first_model: the factory config's models as written.
    first = round_factory(cfg, template, tmp_path / "round-1" / "factory", evaluated, None)
    assert first.models.model == template.models.model and not first.models.served


def test_a_round_without_new_rows_carries_the_model_forward_when_told(tmp_path: Path) -> None:
    cfg = load_rounds_config(_variant(tmp_path, train__on_empty="carry"))
    empty = tmp_path / "round-2" / "factory" / "dataset.jsonl"
    empty.parent.mkdir(parents=True)
    empty.write_text("")
    done = tmp_path / "round-1" / "factory" / "dataset.jsonl"
    done.parent.mkdir(parents=True)
    done.write_text('{"messages": []}\n')
    result = train_round(cfg, 2, "/round-1/final", [done, empty], {}, tmp_path / "t", None)  # type: ignore[arg-type]
    assert not result.trained and result.model_out == "/round-1/final"
    assert "carried forward (train.on_empty: carry)" in result.note
    with pytest.raises(RsrError, match="round 1 exported no rows and there is no earlier model"):
        train_round(cfg, 1, None, [empty], {}, tmp_path / "t", None)  # type: ignore[arg-type]


def test_27b_rounds_example_is_a_valid_config_for_a_gpu_machine() -> None:
    from rsr.training.config import load_recipe

    cfg = load_rounds_config(ROOT / "examples" / "rounds-qwen-27b.yaml", check_tasks=False)
    assert cfg.serve.kind == "vllm" and cfg.serve.base_url
    assert cfg.first_model == "Qwen/Qwen3.5-27B"  # a hub id, served by vLLM, not a path
    recipe = load_recipe(cfg.train.recipe)
    assert recipe.model.path == cfg.first_model and recipe.method == "lora"
    assert cfg.train.launch and "{config}" in cfg.train.launch
    assert (ROOT / "training" / "accelerate" / "fsdp2.yaml").is_file()
    template = load_factory_config(cfg.factory)
    assert cfg.eval.suite in template.export.eval_suites  # tb2 is guarded at export
    assert "core" in template.pool.suites


def test_vllm_serving_checks_the_server_lists_the_round_model_and_says_how_to_serve_it() -> None:
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from rsr.rounds.config import ServeSettings
    from rsr.rounds.serve import serve

    class Models(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 - http.server's naming
            body = json.dumps({"object": "list", "data": [{"id": "rounds-r1"}]}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Models)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        url = f"http://127.0.0.1:{server.server_address[1]}/v1"
        settings = ServeSettings(kind="vllm", base_url=url)
        with serve("/ckpt/r1", "rounds-r1", settings) as served:
            assert served.model == "rsr-vllm/rounds-r1" and served.base_url == url
        with pytest.raises(RsrError, match=r"it serves rounds-r1; serve /ckpt/r2 as 'rounds-r2'"
                                           r"[\s\S]*rsr serve /ckpt/r2 --name rounds-r2\n"):
            with serve("/ckpt/r2", "rounds-r2", settings):
                pass
    finally:
        server.shutdown()
        server.server_close()
    with pytest.raises(RsrError, match="nothing answers there"):
        with serve("/ckpt/r2", "rounds-r2", ServeSettings(kind="vllm", base_url=url)):
            pass


def _recipe_with(tmp_path: Path, **tiny: int) -> Path:
    recipe = yaml.safe_load((ROOT / "training" / "recipes" / "tiny-rounds-smoke.yaml").read_text())
    recipe["model"]["tiny"].update(tiny)
    recipe["data"]["datasets"] = [{"path": str(tmp_path / "rows.jsonl")}]
    path = tmp_path / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe))
    return path


def test_rounds_on_the_engine_refuse_what_it_could_not_serve_before_any_work(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        engine_env: object) -> None:
    """A shape the CPU build refuses, or no engine environment, would only surface after the
    first round's factory and training: `rsr rounds` says it in one line first."""
    from rsr.cli.main import main

    out = tmp_path / "out"
    cfg = yaml.safe_load(_variant(tmp_path).read_text())
    cfg["train"]["recipe"] = str(_recipe_with(tmp_path, head_dim=16))
    (tmp_path / "narrow.yaml").write_text(yaml.safe_dump(cfg))
    assert main(["rounds", str(tmp_path / "narrow.yaml"), "--output-dir", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "model.tiny.head_dim 16" in err and "head_dim: 64" in err
    assert not out.exists()

    monkeypatch.setenv("RSR_ENGINE_VENV", str(tmp_path / "no-engine"))
    assert main(["rounds", str(_variant(tmp_path)), "--output-dir", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "setup.sh --engine" in err, err
    assert not out.exists()
