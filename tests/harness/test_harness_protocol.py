"""The reply parsers, observation cap and prompt packs (no sandbox).

The rules are Harbor 0.26's Terminus 2 rules (the differential test proves the wording too);
these tests pin each rule on its own, with rsr's words.
"""

from __future__ import annotations

import json

import pytest

from rsr.harness.prompts.pack import KEYS, PromptPackError, prompt_pack
from rsr.harness.protocol import StateMReply, parse_json, parse_reply, parse_xml, salvage_xml
from rsr.harness.terminus2 import FIXES, cap_observation, parse_fixes
from rsr.harness.tmux import tmux_separator_rule

WORDS = prompt_pack("rsr")


def _json(**fields) -> str:
    return json.dumps({"analysis": "a", "plan": "p", "commands": [], **fields})


def test_parse_json_takes_the_first_balanced_object():
    result = parse_json(_json(commands=[{"keystrokes": "ls\n", "duration": 0.1}])
                        + ' {"analysis": "second"}', WORDS)
    assert result.error == "" and result.commands[0].keystrokes == "ls\n"
    assert WORDS.render("json_extra_after") in result.warning


def test_parse_json_rejects_a_reply_cut_off_inside_its_command_list():
    cut = ('{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "make\\n", '
           '"duration": 1}, {"keystrokes": "rm -rf build\\n", "duration": 1')
    result = parse_json(cut, WORDS)
    assert result.error and result.commands == []


def test_parse_json_repairs_only_a_missing_final_brace():
    result = parse_json(_json(commands=[{"keystrokes": "ls\n", "duration": 1}])[:-1], WORDS)
    assert result.error == "" and len(result.commands) == 1
    assert result.warning.startswith("- " + WORDS.render(
        "auto_corrected", fix=WORDS.render("json_fix_brace")))


def test_parse_json_is_lenient_with_durations_and_completed_tasks():
    result = parse_json(_json(commands=[{"keystrokes": "a\n", "duration": "soon"},
                                        {"keystrokes": "b"}]), WORDS)
    assert [c.duration for c in result.commands] == [1.0, 1.0] and result.error == ""
    assert WORDS.render("json_bad_duration", n=1) in result.warning
    assert WORDS.render("json_no_duration", n=2) in result.warning
    # Broken commands do not stop a completed task; they become a warning.
    done = parse_json(_json(commands=[{"keystrokes": 5}], task_complete="yes"), WORDS)
    assert done.task_complete and done.error == "" and done.commands == []
    assert WORDS.render("json_keystrokes_type", n=1) in done.warning


def test_parse_json_warns_on_field_order_and_a_missing_newline_between_commands():
    text = ('{"plan": "p", "analysis": "a", "commands": [{"keystrokes": "cd /x", '
            '"duration": 0.1}, {"keystrokes": "ls\\n", "duration": 0.1}]}')
    warnings = parse_json(text, WORDS).warning.split("\n")
    assert warnings[0] == "- " + WORDS.render("json_field_order", found="plan → analysis → "
                                              "commands", expected="analysis → plan → commands")
    assert warnings[1] == "- " + WORDS.render("json_missing_newline", n=1)


def test_parse_json_names_missing_fields():
    result = parse_json('{"analysis": "a"}', WORDS)
    assert result.error == WORDS.render("json_missing_fields", fields="plan, commands")


def test_parse_xml_warns_on_missing_sections_entities_and_extra_responses():
    text = ('<response><plan>p</plan><commands><keystrokes duration="0.5">echo &lt;x&gt;\n'
            '</keystrokes></commands></response>\n<response></response>')
    result = parse_xml(text, WORDS)
    assert result.error == "" and result.commands[0].keystrokes == "echo &lt;x&gt;\n"
    for expected in (WORDS.render("xml_missing_section", name="analysis"),
                     WORDS.render("xml_multiple_responses", count=2),
                     WORDS.render("xml_entity", entity="&lt;", char="<")):
        assert expected in result.warning


def test_parse_xml_reads_an_empty_task_complete_as_false():
    for tag in ("<task_complete></task_complete>", "<task_complete/>"):
        result = parse_xml(f"<response><analysis>a</analysis><plan>p</plan><commands>"
                           f"<keystrokes>ls\n</keystrokes></commands>{tag}</response>", WORDS)
        assert result.task_complete is False and result.error == ""
    assert parse_xml("<response><analysis>a</analysis></response>", WORDS).error == \
        WORDS.render("xml_missing_commands")


def test_parse_xml_salvages_a_reply_cut_after_its_response():
    whole = ("<response><analysis>a</analysis><plan>p</plan><commands><keystrokes "
             'duration="1">ls\n</keystrokes></commands></response>')
    assert salvage_xml(whole + "\n<resp", WORDS) == whole
    assert salvage_xml(whole[:40], WORDS) is None


def test_parse_reply_keeps_statem_fields_in_both_formats():
    xml = parse_reply("<response><analysis>a</analysis><plan>p</plan><commands></commands>"
                      "<next_state>verify</next_state></response>", "xml", StateMReply)
    assert xml.reply.next_state == "verify"
    assert parse_reply(_json(next_state="act"), "json", StateMReply).reply.next_state == "act"


def test_cap_observation_keeps_half_the_limit_from_each_end():
    text = "HEAD\n" + "x" * 50_000 + "\nTAIL"
    capped = cap_observation(text, 10_000, WORDS)
    assert capped.startswith("HEAD") and capped.endswith("TAIL")
    omitted = len(text.encode()) - 10_000
    assert WORDS.render("output_limited", head="", max_bytes=10_000, omitted=omitted,
                        tail="").strip() in capped
    assert cap_observation("short", 10_000, WORDS) == "short"


def test_prompt_pack_rsr_has_every_key_and_a_stable_sha256():
    pack = prompt_pack("rsr")
    assert set(KEYS) <= set(pack.texts) and len(pack.sha256) == 64
    assert pack.describe()["prompt_pack_version"] == "rsr-v3"
    assert "{instruction}" in pack.texts["first_json"]


def test_prompt_pack_directory_rejects_missing_keys_and_unknown_placeholders(tmp_path):
    with pytest.raises(PromptPackError, match="first_json.txt is missing"):
        prompt_pack(str(tmp_path))
    source = prompt_pack("rsr")
    for key in ("first_json", "first_xml", "timeout", "summary", "questions"):
        (tmp_path / f"{key}.txt").write_text(source.texts[key])
    (tmp_path / "messages.toml").write_text('screen = "{screan}"\n')
    with pytest.raises(PromptPackError, match="lacks"):
        prompt_pack(str(tmp_path))
    lines = [f"{key} = {json.dumps(source.texts[key])}" for key in KEYS
             if key not in ("first_json", "first_xml", "timeout", "summary", "questions")]
    (tmp_path / "messages.toml").write_text("\n".join(lines).replace(
        '"Terminal screen now:\\n{screen}"', '"{screan}"'))
    with pytest.raises(PromptPackError, match="screen: unknown placeholder"):
        prompt_pack(str(tmp_path))


def test_prompt_pack_rejects_an_unknown_name():
    with pytest.raises(PromptPackError, match="not `rsr`, `harbor` or a directory"):
        prompt_pack("no-such-pack")


def test_tmux_separator_rule_drops_a_trailing_semicolon_as_tmux_does():
    assert tmux_separator_rule("echo a;") == "echo a"
    assert tmux_separator_rule("echo a\\;") == "echo a;"
    assert tmux_separator_rule("ls\n") == "ls\n" and tmux_separator_rule("C-c") == "C-c"


def test_terminus2_defaults_are_the_reference_ones():
    from rsr.harness.terminus2 import Terminus2Config

    config = Terminus2Config()
    assert config.max_episodes == 1_000_000 and config.fixes == [] and config.prompts == "rsr"
    assert config.summarise_free_tokens == 8_000 and config.observation_limit == 10_000
    assert config.temperature is None and config.keep_reasoning is False


def test_fixes_parse_names_and_all_and_reject_typos():
    assert parse_fixes("history-limit, new-output") == ["history-limit", "new-output"]
    assert parse_fixes("all") == list(FIXES) and parse_fixes(None) == []
    assert set(FIXES) == {"history-limit", "new-output", "cap-once", "keys", "parse-flag"}
    with pytest.raises(Exception, match="unknown histroy"):
        parse_fixes("histroy")


def test_prompt_pack_harbor_reads_the_installed_package_without_importing_it(monkeypatch):
    from harbor_ref import harbor_site_packages

    from rsr.harness.prompts import harbor as harbor_pack

    agent_dir = harbor_site_packages() / "harbor" / "agents" / "terminus_2"
    monkeypatch.setenv("RSR_HARBOR_TEMPLATES", str(agent_dir / "templates"))
    prompt_pack.cache_clear()
    try:
        pack = prompt_pack("harbor")
        assert pack.texts["first_json"] == \
            (agent_dir / "templates" / "terminus-json-plain.txt").read_text()
        assert pack.version.startswith("0.26") and pack.sha256 != prompt_pack("rsr").sha256
        import sys
        assert "harbor" not in sys.modules
        monkeypatch.setenv("RSR_HARBOR_TEMPLATES", "/nonexistent/templates")
        prompt_pack.cache_clear()
        with pytest.raises(harbor_pack.HarborPackError, match="RSR_HARBOR_TEMPLATES"):
            prompt_pack("harbor")
    finally:
        prompt_pack.cache_clear()


def test_prompt_pack_harbor_fails_loudly_when_the_source_moved(tmp_path):
    from harbor_ref import harbor_site_packages

    from rsr.harness.prompts.harbor import HarborPackError, harbor_texts

    source = harbor_site_packages() / "harbor" / "agents" / "terminus_2"
    copy = tmp_path / "terminus_2"
    copy.mkdir()
    (copy / "templates").symlink_to(source / "templates")
    for name in ("terminus_2.py", "tmux_session.py", "terminus_json_plain_parser.py",
                 "terminus_xml_plain_parser.py"):
        (copy / name).write_text((source / name).read_text())
    text = (copy / "terminus_2.py").read_text()
    (copy / "terminus_2.py").write_text(text.replace("terminal_output", "screen_text"))
    with pytest.raises(HarborPackError, match="confirm_json"):
        harbor_texts(copy)


def test_prompt_pack_harbor_is_found_through_a_venv_python(monkeypatch, tmp_path):
    from harbor_ref import harbor_home

    monkeypatch.chdir(tmp_path)  # no .cache/hvenv here
    monkeypatch.delenv("RSR_HARBOR_TEMPLATES", raising=False)
    monkeypatch.setenv("RSR_HARBOR_PYTHON", str(harbor_home() / "bin" / "python"))
    prompt_pack.cache_clear()
    try:
        assert prompt_pack("harbor").source.startswith(str(harbor_home()))
    finally:
        prompt_pack.cache_clear()
