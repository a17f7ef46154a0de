"""The differential test: a model sees under rsr/terminus2 what it sees under Harbor's Terminus 2.

The same scripted conversations (parity_scenarios.py) run through Harbor 0.26's Terminus 2
(`harbor run --agent terminus-2`, LiteLLM pointed at a loopback server) and through
rsr/terminus2 (`inspect eval`, Inspect's OpenAI-compatible provider pointed at the same
server), with `prompts=harbor` (Harbor's words, read from the installed package) and with
`prompts=rsr` (ours). Every request the server receives is recorded; the two sequences must be
identical after normalising hostnames, container ids and timestamps (with rsr's wording:
identical except for the template text). A failure prints the first differing message.

Both sides count context tokens with cl100k (LiteLLM's bundled copy; tiktoken here would
otherwise need a download), so the small-context scenario summarises at the same turn.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from harbor_ref import harbor_home, harbor_site_packages
from loopback_openai import LoopbackOpenAI
from parity import (
    TEST_TASKS,
    Scenario,
    Variant,
    first_difference,
    renamed,
    run_rsr,
    start_harbor,
    start_harbor_oracle,
)
from parity_scenarios import SCENARIOS, XML_SCENARIOS

from rsr.harness.prompts.pack import prompt_pack

pytestmark = pytest.mark.docker

ALL = SCENARIOS + XML_SCENARIOS
# Tasks using features beyond the core suite's (skills), run by both runners' oracles too.
ORACLE_TASKS = [TEST_TASKS / "skills-report"]
VARIANTS = {
    "rsr": Variant({"prompts": "harbor"}),
    "rsr-words": Variant({"prompts": "rsr"}),
    # Harbor's words with every quirk corrected, on the scenario that shows them.
    "rsr-fixed": Variant({"prompts": "harbor", "fixes": "all"}, only=("long-output",)),
    "rsr-keep": Variant({"prompts": "harbor", "keep_reasoning": True}, only=("reasoning",)),
}


@dataclass
class ParityRun:
    requests: dict[str, list[dict[str, Any]]]
    harbor: dict[str, dict[str, Any]]
    samples: dict[str, Any]


@pytest.fixture(scope="module")
def parity(tmp_path_factory: pytest.TempPathFactory) -> ParityRun:
    venv = harbor_home()
    tokenizers = harbor_site_packages() / "litellm" / "litellm_core_utils" / "tokenizers"
    saved = {name: os.environ.get(name) for name in ("TIKTOKEN_CACHE_DIR", "RSR_HARBOR_PYTHON")}
    os.environ["TIKTOKEN_CACHE_DIR"] = str(tokenizers)
    os.environ["RSR_HARBOR_PYTHON"] = str(venv / "bin" / "python")  # prompts=harbor finds it
    work = tmp_path_factory.mktemp("parity")
    copies: list[Scenario] = [*ALL, *(renamed(s, suffix) for s in ALL for suffix in VARIANTS)]
    try:
        with LoopbackOpenAI({s.name: s.turns for s in copies}) as server:
            # Both sides at once (each conversation has its own tag): Harbor in the background.
            jobs = start_harbor(venv, ALL, server, work)
            oracle_jobs = start_harbor_oracle(venv, ORACLE_TASKS, work)
            try:
                samples = run_rsr(ALL, server, work, VARIANTS, oracle_tasks=ORACLE_TASKS)
            except BaseException:
                jobs.kill()
                oracle_jobs.kill()
                raise
            harbor = jobs.wait()
            harbor.update({f"{name}.oracle": trial
                           for name, trial in oracle_jobs.wait().items()})
            requests = {name: rec.requests for name, rec in server.recordings.items()}
            assert not server.unrouted, f"requests without a scenario tag: {server.unrouted[:1]}"
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return ParityRun(requests, harbor, samples)


def _reward(run: ParityRun, name: str) -> tuple[Any, Any]:
    trial = run.harbor.get(name)
    assert trial is not None, f"Harbor produced no trial for {name}"
    harbor = ((trial["result"].get("verifier_result") or {}).get("rewards") or {}).get("reward")
    sample = run.samples.get(f"{name}.rsr")
    assert sample is not None and sample.error is None, \
        f"rsr sample {name}: {sample.error.message if sample else 'missing'}"
    assert sample.scores, f"rsr sample {name} was not scored"
    return harbor, next(iter(sample.scores.values())).value["reward"]


@pytest.mark.parametrize("name", [s.name for s in ALL])
def test_terminus2_parity_sends_what_harbor_sends(parity: ParityRun, name: str):
    ours = parity.requests[f"{name}.rsr"]
    assert parity.requests[name], f"Harbor sent nothing for {name}"
    difference = first_difference(parity.requests[name], ours)
    assert difference is None, f"{name}: {difference}"
    harbor, rsr = _reward(parity, name)
    assert harbor == rsr, f"{name}: Harbor reward {harbor}, rsr reward {rsr}"


@pytest.mark.parametrize("name", [s.name for s in ALL])
def test_terminus2_parity_rsr_wording_changes_only_the_words(parity: ParityRun, name: str):
    difference = first_difference(parity.requests[name], parity.requests[f"{name}.rsr-words"],
                                  same_template=False)
    assert difference is None, f"{name} (prompts=rsr): {difference}"
    sample = parity.samples[f"{name}.rsr-words"]
    assert sample.store["rsr_harness"]["prompt_pack"] == "rsr"


def _user_texts(requests: list[dict[str, Any]]) -> list[str]:
    return [str(r["messages"][-1]["content"]) for r in requests]


def test_terminus2_parity_truncated_reply_is_never_partly_executed(parity: ParityRun):
    for name in ("truncated", "truncated.rsr"):
        texts = _user_texts(parity.requests[name])
        # The reply cut off inside its command list is answered with a parse error alone...
        assert "rm -rf /app" not in "".join(texts[1:]) and "parsing errors" in texts[1]
        # ...and the one missing only its final brace ran, with the repair reported.
        assert "AUTO-CORRECTED" in texts[2] and "Hello, world!" in texts[2]


def test_terminus2_parity_reproduces_harbor_history_quirks(parity: ParityRun):
    for name in ("long-output", "long-output.rsr"):
        after_1500, after_2500, after_7500 = _user_texts(parity.requests[name])[1:4]
        # 1,500 lines fit tmux's default 2,000-line pane history: all of them are shown
        # (our old 500+500 line pre-cut hid the middle).
        assert after_1500.startswith("New Terminal Output:") and "\n750\n" in after_1500
        # Past 2,000 lines the previous capture no longer matches: only the screen is shown.
        assert after_2500.startswith("Current Terminal Screen:") and "\n1500\n" not in after_2500
        assert after_7500.startswith("Current Terminal Screen:")


def test_terminus2_fixes_show_what_the_quirks_hide_and_are_logged(parity: ParityRun):
    after_1500, after_2500, after_7500 = _user_texts(parity.requests["long-output.rsr-fixed"])[1:4]
    assert "\n750\n" in after_1500
    for text, last in ((after_2500, 2500), (after_7500, 7500)):
        # New output again, head and tail within the 10,000-byte cap (not the last screen).
        assert text.startswith("New Terminal Output:") and "seq 1" in text
        assert "\n1\n2\n" in text and f"\n{last}\n" in text and "interior bytes omitted" in text
    settings = parity.samples["long-output.rsr-fixed"].store["rsr_harness"]
    assert settings["parity_mode"] is False
    assert settings["fixes"] == ["history-limit", "new-output", "cap-once", "keys", "parse-flag"]


def test_terminus2_parity_summarises_with_harbor_handoff_structure(parity: ParityRun):
    for name in ("summarise", "summarise.rsr"):
        requests = parity.requests[name]
        questions_call = requests[3]["messages"]
        assert len(questions_call) == 1  # the questions come from a fresh context
        after = requests[5]["messages"]
        # [first prompt, questions prompt, questions, hand-off with the answers]
        assert [m["role"] for m in after] == ["user", "user", "assistant", "user"]
        assert after[2]["content"].startswith("1. Was the file written?")
        assert "1. The echo ran." in after[3]["content"]


def test_terminus2_parity_agent_timeout_and_shell_exit_end_the_run(parity: ParityRun):
    for suffix in ("", ".rsr"):
        assert len(parity.requests[f"agent-timeout{suffix}"]) == 1
        assert len(parity.requests[f"shell-exit{suffix}"]) == 1
    assert parity.samples["agent-timeout.rsr"].store["rsr_harness_result"]["end_reason"] == \
        "agent_timeout"
    assert parity.samples["shell-exit.rsr"].store["rsr_harness_result"]["end_reason"] == \
        "shell_exited"


def test_terminus2_parity_logs_record_pack_and_parity_mode(parity: ParityRun):
    settings = parity.samples["plain.rsr"].store["rsr_harness"]
    assert settings["prompt_pack"] == "harbor" and len(settings["prompt_pack_sha256"]) == 64
    assert settings["parity_mode"] is True and settings["fixes"] == []
    words = parity.samples["plain.rsr-words"].store["rsr_harness"]
    assert words["prompt_pack_sha256"] != settings["prompt_pack_sha256"]


def test_terminus2_parity_atif_matches_harbor_tool_call_shape(parity: ParityRun,
                                                              tmp_path: Path):
    from rsr.trajectories.atif import ATIF_VERSION, to_atif

    harbor = parity.harbor["plain"]["trajectory"]
    ours = to_atif(parity.samples["plain.rsr"]).model_dump(exclude_none=True)
    assert ours["schema_version"] == harbor["schema_version"] == ATIF_VERSION

    def calls(trajectory: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
        return [(c["tool_call_id"], c["function_name"], c["arguments"])
                for step in trajectory["steps"] for c in step.get("tool_calls") or []]

    assert calls(ours) == calls(harbor)
    ours_obs = [[r.get("source_call_id") for r in (s.get("observation") or {}).get("results", [])]
                for s in ours["steps"] if s["source"] == "agent"]
    harbor_obs = [[r.get("source_call_id") for r in (s.get("observation") or {}).get("results",
                                                                                   [])]
                  for s in harbor["steps"] if s["source"] == "agent"]
    assert ours_obs == harbor_obs


def test_terminus2_parity_atif_keeps_summaries_as_sub_trajectories(parity: ParityRun):
    from rsr.trajectories.atif import to_atif

    harbor = parity.harbor["summarise"]["trajectory"]
    ours = to_atif(parity.samples["summarise.rsr"])

    def compactions(steps: list[dict[str, Any]]) -> list[int]:
        return [len(s["observation"]["results"][0]["subagent_trajectory_ref"]) for s in steps
                if s["source"] == "system"
                and (s.get("extra") or {}).get("context_management", {}).get("type")
                == "compaction"]

    dumped = ours.model_dump(exclude_none=True)
    assert compactions(dumped["steps"]) == compactions(harbor["steps"]) == [3]
    embedded = {t.trajectory_id for t in ours.subagent_trajectories or []}
    refs = {r["trajectory_id"] for s in dumped["steps"] if s["source"] == "system"
            for r in s["observation"]["results"][0]["subagent_trajectory_ref"]}
    assert refs == embedded and len(embedded) == 3
    # The hand-off follows the compaction step as a user step, as in Harbor's trajectory.
    index = next(i for i, s in enumerate(dumped["steps"]) if s["source"] == "system")
    assert dumped["steps"][index + 1]["source"] == "user"
    assert "1. The echo ran." in dumped["steps"][index + 1]["message"]


def test_terminus2_parity_context_fallbacks_follow_harbor(parity: ParityRun):
    pack = prompt_pack("harbor")
    for suffix in ("", ".rsr"):
        short = parity.requests[f"context-short{suffix}"]
        instruction = "Create a file /app/hello.txt"
        # Full summary refused -> a short summary asked with no history -> hand-off.
        assert len(short[3]["messages"]) == 1
        assert short[3]["messages"][0]["content"].startswith(
            pack.texts["short_summary"].split("{")[0] + instruction)
        assert short[4]["messages"][-1]["content"].startswith(instruction)
        assert "Write /app/hello.txt next." in short[4]["messages"][-1]["content"]
        bare = parity.requests[f"context-bare{suffix}"]
        # Every call refused: the bare hand-off, then the stand-in reply fails to parse.
        assert bare[4]["messages"][-1]["content"].startswith(instruction)
        assert bare[5]["messages"][-1]["content"].startswith(
            pack.texts["parse_error"].split("{")[0])
    compactions = parity.samples["context-bare.rsr"].store["rsr_harness_result"]["compactions"]
    assert [c["level"] for c in compactions] == ["bare"]


def test_terminus2_parity_drops_earlier_reasoning_unless_kept(parity: ParityRun):
    from inspect_ai.model import ContentReasoning

    for name in ("reasoning", "reasoning.rsr"):
        assistant = parity.requests[name][1]["messages"][1]
        assert set(assistant) == {"role", "content"} and "chain of thought" not in str(assistant)
    # The log keeps it (ATIF's reasoning_content); only the context drops it.
    logged = parity.samples["reasoning.rsr"].messages[1]
    assert any(isinstance(c, ContentReasoning) for c in logged.content)
    kept = parity.requests["reasoning.rsr-keep"][1]["messages"][1]
    assert kept.get("reasoning_content") == "private chain of thought"


def _first_prompt(run: ParityRun, name: str) -> str:
    return str(run.requests[name][0]["messages"][0]["content"])


def test_terminus2_parity_scenarios_show_the_behaviour_they_are_named_for(parity: ParityRun):
    for suffix in ("", ".rsr"):
        texts = _user_texts(parity.requests[f"key-names{suffix}"])
        # `enter`, `C-m`, `^M`, `bspace` are keys to tmux, `0x41` is `A`, `KP1` is `1`;
        # `Enter\n` is typed as text and ` Enter ` too (then erased with C-u).
        assert "\none\n" in texts[1] and "# Enter\nbash: Enter: command not found" in texts[1]
        assert "\ntwo\n" in texts[1] and "\nthree\n" in texts[1] and "\n0x41A\n" in texts[1]
        plain, confirm = _user_texts(parity.requests[f"output-cap{suffix}"])[2:4]
        # Capped twice: the second cut leaves out only the first cut's marker and its edges.
        assert re.search(r"; \d{2} interior bytes omitted", plain), plain[4900:5200]
        assert re.search(r"; \d{4} interior bytes omitted", confirm)  # capped once
        error = _user_texts(parity.requests[f"error-in-warning{suffix}"])[1]
        assert error.startswith("Previous response had parsing errors:\nWARNINGS:")
        assert "Hello" not in error  # nothing ran
        shell = _user_texts(parity.requests[f"shell-env{suffix}"])[1]
        assert "\nlevel=1\n" in shell and "RSR" not in shell
        assistant = [m["content"] for m in parity.requests[f"think-tags{suffix}"][3]["messages"]
                     if m["role"] == "assistant"]
        assert assistant[0].startswith("\n\n{") and assistant[1].endswith("</think>")
        assert assistant[2].startswith("  <think>indented</think>{")
        assert "- search: streamable-http transport, url: http://127.0.0.1:8765/mcp\n" in \
            _first_prompt(parity, f"mcp-servers{suffix}")
        skills = _first_prompt(parity, f"skills{suffix}")
        assert skills.count("<skill>") == 2 and "&amp; check them &lt;fast&gt;" in skills
        assert "<location>/skills/hello-file/SKILL.md</location>" in skills


@pytest.mark.parametrize("task", [t.name for t in ORACLE_TASKS])
def test_terminus2_parity_feature_tasks_score_the_same_under_both_oracles(parity: ParityRun,
                                                                          task: str):
    trial = parity.harbor.get(f"{task}.oracle")
    assert trial is not None, f"Harbor's oracle produced no trial for {task}"
    harbor = ((trial["result"].get("verifier_result") or {}).get("rewards") or {}).get("reward")
    sample = parity.samples[f"{task}.oracle"]
    assert sample.error is None and sample.scores, f"rsr oracle on {task}: {sample.error}"
    rsr = next(iter(sample.scores.values())).value["reward"]
    assert harbor == rsr == 1.0, f"{task}: Harbor's oracle {harbor}, rsr's {rsr}"
