"""The scripted conversations of the Terminus 2 differential test (one per behaviour)."""

from __future__ import annotations

import json
from typing import Any

from loopback_openai import Turn, context_length_error
from parity import TEST_TASKS, Scenario

HELLO = "echo 'Hello, world!' > /app/hello.txt\n"


def reply(*commands: str | tuple[str, float], complete: bool = False, **fields: Any) -> str:
    cmds = [{"keystrokes": c, "duration": 0.5} if isinstance(c, str)
            else {"keystrokes": c[0], "duration": c[1]} for c in commands]
    return json.dumps({"analysis": "a", "plan": "p", "commands": cmds,
                       "task_complete": complete, **fields})


def xml_reply(*commands: str, complete: str | None = None, analysis: str | None = "a",
              plan: str | None = "p") -> str:
    parts = ["<response>"]
    if analysis is not None:
        parts.append(f"<analysis>{analysis}</analysis>")
    if plan is not None:
        parts.append(f"<plan>{plan}</plan>")
    parts.append("<commands>" + "".join(f'<keystrokes duration="0.5">{c}</keystrokes>'
                                        for c in commands) + "</commands>")
    if complete is not None:
        parts.append(f"<task_complete>{complete}</task_complete>")
    parts.append("</response>")
    return "\n".join(parts)


DONE = Turn(reply(complete=True))

SCENARIOS: list[Scenario] = [
    Scenario("plain", [Turn(reply(HELLO, "cat /app/hello.txt\n")), DONE, DONE]),
    Scenario("parse-error", [
        Turn("I will write the file now, no JSON needed."),
        Turn('{"plan": "p", "analysis": "a", "commands": [{"keystrokes": "echo \'Hello, '
             'world!\' > /app/hello.txt"}, {"keystrokes": "ls\\n", "duration": "soon", '
             '"note": 1}]} and some trailing words'),
        Turn(reply(("", 0.2), complete=False) + "\n{}"),
        DONE, DONE]),
    Scenario("truncated", [
        # Cut off inside the command list: an error; neither command may run.
        Turn('{"analysis": "a", "plan": "p", "commands": [{"keystrokes": "echo \'Hello, '
             'world!\' > /app/hello.txt\\n", "duration": 0.5}, {"keystrokes": "rm -rf /app'
             '\\n", "duration": 0.5'),
        # Only the final brace missing: repaired (with a warning) and run.
        Turn(reply(HELLO)[:-1]),
        DONE, DONE]),
    Scenario("long-output", [
        Turn(reply(("seq 1 1500\n", 1.0))),
        Turn(reply(("seq 1 2500\n", 1.0))),
        Turn(reply(("seq 1 7500\n", 2.0))),
        Turn(reply(HELLO)), DONE, DONE]),
    Scenario("double-confirm", [
        Turn(reply(("echo 'Goodbye' > /app/hello.txt\n", 0.5), complete=True)),
        Turn(reply(HELLO, complete=False)),   # withdrawn: the next completion asks again
        Turn(reply(complete=True)),
        Turn(reply("cat /app/hello.txt\n", complete=True))]),
    Scenario("output-length", [
        Turn(reply(HELLO)[:60], finish_reason="length"),
        Turn(reply(HELLO)), DONE, DONE]),
    Scenario("context-error", [
        Turn(reply(("ls /usr/bin | head -50\n", 0.5))),
        context_length_error(),
        Turn("So far: listed /usr/bin; /app/hello.txt is not written yet."),
        Turn("1. Is /app/hello.txt there?\n2. Which shell?"),
        Turn("1. No.\n2. bash."),
        Turn(reply(HELLO)), DONE, DONE]),
    # The full summary fails too: a short summary from the instruction and the screen.
    Scenario("context-short", [
        Turn(reply(("ls /usr/bin | head -50\n", 0.5))), context_length_error(),
        context_length_error(), Turn("Write /app/hello.txt next."),
        Turn(reply(HELLO)), DONE, DONE]),
    # Everything fails: the bare instruction and screen, and a stand-in reply (a parse error).
    Scenario("context-bare", [
        Turn(reply(("ls /usr/bin | head -50\n", 0.5))), context_length_error(),
        context_length_error(), context_length_error(), context_length_error(),
        Turn(reply(HELLO)), DONE, DONE]),
    Scenario("agent-timeout", [Turn(reply(("sleep 40\n", 30.0))), Turn(reply(HELLO)), DONE],
             toml={"[agent]\ntimeout_sec = 300": "[agent]\ntimeout_sec = 8"}),
    # A trailing `;` is a tmux command separator in the reference: the shell never sees it.
    Scenario("keys", [Turn(reply(("echo semi;", 0.3), ("\n", 0.5), ("echo lit\\;", 0.3),
                                 ("\n", 0.5), HELLO)), DONE, DONE]),
    # A reasoning model's reasoning is not sent back with the next request.
    Scenario("reasoning", [Turn(reply(HELLO), reasoning="private chain of thought"),
                           Turn(reply(complete=True), reasoning="more thoughts"), DONE]),
    Scenario("shell-exit", [Turn(reply(HELLO, "exit\n")), Turn(reply("ls\n")), DONE]),
]

# Which strings name a key is tmux's to decide (its lookup ignores case, knows `^M` and
# `0x41`); a string with a trailing newline or space is text.
SCENARIOS.append(Scenario("key-names", [Turn(reply(
    ("echo one", 0.2), ("enter", 0.5), ("Enter\n", 0.5), ("echo two", 0.2), ("C-m", 0.5),
    (" Enter ", 0.2), ("C-u", 0.2), ("echo three", 0.2), ("^M", 0.5), ("echo 0x41", 0.2),
    ("0x41", 0.2), ("KP1", 0.2), ("bspace", 0.2), ("ENTER", 0.5), HELLO)), DONE, DONE]))

# Over 10,000 bytes of new output: capped when read and again on the plain path (the model is
# told the second cut's count); the confirmation shows it capped once. A short prompt first:
# Harbor's copy runs on the host network (with the host's name in its prompt), so the byte
# offsets of the cuts are the same only without the host name.
_ROWS = "seq -f 'row %g: ..................................................' 1 {}\n"
SCENARIOS.append(Scenario("output-cap", [
    Turn(reply("PS1='$ '\n")),
    Turn(reply((_ROWS.format(400), 1.0))),
    Turn(reply(HELLO, (_ROWS.format(300), 1.0), complete=True)), DONE]))

# A warning that quotes `ERROR:` (here an unknown field's name) makes the reply a parse error.
SCENARIOS.append(Scenario("error-in-warning", [
    Turn(json.dumps({"analysis": "a", "plan": "p", "commands": [
        {"keystrokes": HELLO, "duration": 0.5, "ERROR: see note": 1}],
        "task_complete": False})),
    Turn(reply(HELLO)), DONE, DONE]))

# Only a leading <think> block is split off, the rest kept as sent (whitespace included).
SCENARIOS.append(Scenario("think-tags", [
    Turn("<think>I should write the file.</think>\n\n" + reply(HELLO)),
    Turn(reply("cat /app/hello.txt\n") + "\n<think>trailing thoughts</think>"),
    Turn("  <think>indented</think>" + reply(complete=True)), DONE]))

# The agent's shell: its level and the names in its environment.
SCENARIOS.append(Scenario("shell-env", [
    Turn(reply("echo level=$SHLVL; env | cut -d= -f1 | sort | tr '\\n' ' '; echo\n", HELLO)),
    DONE, DONE]))

# MCP servers the task declares are listed after the instruction (`http` named as Harbor
# normalises it); nothing here starts them.
MCP_TOML = """
[[environment.mcp_servers]]
name = "notes"
transport = "stdio"
command = "python3"
args = ["-m", "notes_server", "--root", "/app"]

[[environment.mcp_servers]]
name = "search"
transport = "http"
url = "http://127.0.0.1:8765/mcp"
"""
SCENARIOS.append(Scenario("mcp-servers", [Turn(reply(HELLO)), DONE, DONE],
                          append={"task.toml": MCP_TOML}))

# Skills under environment.skills_dir (the image copies them there): each SKILL.md with a
# name and a description is listed; one without front matter and a nested one are not.
SKILLS = {
    "environment/skills/hello-file/SKILL.md":
        "---\nname: hello-file\ndescription: Write greeting files & check them <fast>.\n---\n"
        "# Hello files\nUse `echo 'Hello, world!' > FILE`.\n",
    "environment/skills/csv-report/SKILL.md":
        "---\nname: csv-report\ndescription: >\n  Summarise a CSV file\n  by region.\n---\nUse awk.\n",
    "environment/skills/no-front-matter/SKILL.md": "# Not a skill: no front matter\n",
    "environment/skills/csv-report/nested/SKILL.md": "---\nname: nested\ndescription: x\n---\n",
}
SCENARIOS.append(Scenario("skills", [
    Turn(reply("cat /skills/hello-file/SKILL.md\n", HELLO)), DONE, DONE],
    files=SKILLS, append={"environment/Dockerfile": "COPY skills /skills\n"},
    toml={'workdir = "/app"': 'workdir = "/app"\nskills_dir = "/skills"'}))

# A task written with a skill: the model reads the skill and uses its script.
SCENARIOS.append(Scenario("skills-task", [
    Turn(reply("cat /skills/region-totals/SKILL.md\n")),
    # Python's start-up on a loaded machine: a generous wait, so that `cat` is never typed ahead.
    Turn(reply(("python3 /skills/region-totals/scripts/totals.py /app/sales.csv "
                "/app/report.json\n", 3.0), "cat /app/report.json\n")), DONE, DONE],
    task="skills-report", root=TEST_TASKS))

SCENARIOS.append(Scenario(
    "summarise", [
        Turn(reply(("seq 1 2000\n", 1.0))),   # ~5,000 tokens: free context drops below 8,000
        Turn(reply(HELLO)),
        Turn("Summary: printed 1..2000; writing /app/hello.txt next."),
        Turn("1. Was the file written?\n2. Any errors?"),
        Turn("1. The echo ran.\n2. None."),
        DONE, DONE],
    harbor_kwargs={"model_info": {"max_input_tokens": 10_000, "max_output_tokens": 2_000,
                                  "input_cost_per_token": 0, "output_cost_per_token": 0}},
    rsr_args={"context_window": 10_000}))

XML_SCENARIOS: list[Scenario] = [
    Scenario("xml", [
        Turn(xml_reply("echo '&lt;ok&gt;'\n", analysis=None)),
        Turn(xml_reply("cat /app/hello.txt\n") + "\n<response><analysis>b</analysis>"
             "</response>"),
        Turn(xml_reply(HELLO, complete="")),
        Turn(xml_reply(complete="true")),
        Turn(xml_reply(complete="true"))],
        harbor_kwargs={"parser_name": "xml"}, rsr_args={"reply_format": "xml"}),
]
