"""`rsr/statem`: the terminal harness with an explicit, checked workflow state machine.

States: understand -> plan -> act -> verify -> done. Each reply names `next_state`; a move is
accepted only if it is an allowed edge *and* its check holds. The machine lives in the harness
(not in the conversation), so it survives summarisation; it is shown with every observation.

The checks:
- the edges force a plan before any act or verify (understand -> plan -> act -> verify);
- done needs a verify turn with commands whose output the model has already seen, and that
  came after the last change. Any turn whose commands ran outside `verify` counts as a change.
- task_complete is honoured only in `done`, and not on a turn that types commands there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from inspect_ai.agent import Agent, AgentState, agent

from rsr.harness import prompts
from rsr.harness.protocol import Reply, ReplyFormat, StateMReply
from rsr.harness.steps import stepwise
from rsr.harness.terminus2 import (
    OBSERVATION_LIMIT,
    TOKEN_BUDGET,
    Review,
    TerminalHarness,
    Terminus2Config,
    WaitMode,
    parse_fixes,
)
from rsr.options import check_options, option_model

State = Literal["understand", "plan", "act", "verify", "done"]
STATES: tuple[State, ...] = ("understand", "plan", "act", "verify", "done")

EDGES: dict[State, tuple[State, ...]] = {
    "understand": ("understand", "plan"),
    "plan": ("plan", "understand", "act"),
    "act": ("act", "plan", "verify"),
    "verify": ("verify", "act", "plan", "done"),
    "done": ("done", "act", "verify"),
}


@dataclass
class Workflow:
    """The state machine and the evidence its checks use (turn numbers of the main loop)."""

    state: State = "understand"
    history: list[tuple[State, int]] = field(default_factory=lambda: [("understand", 0)])
    last_change_turn: int = -1
    verify_turns: list[int] = field(default_factory=list)
    refusals: int = 0

    def check(self, target: str, turn: int) -> str | None:
        """Why the move to `target` at `turn` is refused, or None when it is accepted."""
        if target not in STATES:
            return f"unknown state {target!r}; states are {', '.join(STATES)}"
        if target not in EDGES[self.state]:
            return (f"{self.state} -> {target} is not an allowed move; from {self.state} you "
                    f"may go to {', '.join(EDGES[self.state])}")
        if target == "done" and self.state != "done":
            if not self.verified(turn):
                return ("done needs a verify turn whose output you have seen and that came "
                        "after your last change; run verification commands in verify first")
        return None

    def verified(self, turn: int) -> bool:
        """A verify turn before `turn` came after the last change (its output was read)."""
        return any(self.last_change_turn < t < turn for t in self.verify_turns)

    def move(self, target: State, turn: int) -> None:
        if target != self.state:
            self.history.append((target, turn))
        self.state = target

    def record_commands(self, turn: int, had_commands: bool) -> None:
        if not had_commands:
            return
        if self.state == "verify":
            self.verify_turns.append(turn)
        else:
            self.last_change_turn = turn

    def history_text(self) -> str:
        return " > ".join(f"{state}@{turn}" for state, turn in self.history[-12:])

    def display(self) -> str:
        return prompts.render(prompts.STATEM_DISPLAY, state=self.state,
                              history=self.history_text(),
                              allowed=", ".join(EDGES[self.state])).rstrip("\n")


class StateMHarness(TerminalHarness):
    name = "statem"
    reply_model = StateMReply

    def __init__(self, config: Terminus2Config) -> None:
        super().__init__(config)
        self.workflow = Workflow()
        self._ran_commands = False

    def extra_instructions(self) -> str:
        transitions = "; ".join(f"{s} -> {', '.join(t)}" for s, t in EDGES.items())
        return prompts.render(prompts.STATEM, self.config.prompt_version,
                              transitions=transitions).rstrip("\n")

    def review(self, reply: Reply) -> Review:
        assert isinstance(reply, StateMReply)
        target = (reply.next_state or self.workflow.state).strip().lower()
        refusal = self.workflow.check(target, self.turn)
        notes: list[str] = []
        if refusal is None:
            self.workflow.move(target, self.turn)  # type: ignore[arg-type]
        else:
            # The commands were meant for the refused state: none of them is typed.
            self.workflow.refusals += 1
            notes.append(f"[workflow] move to {target} refused: {refusal}. You stay in "
                         f"{self.workflow.state}; nothing was typed this turn.")
        # Commands typed in done (or on the way to it) are a change nobody has verified yet.
        changing = refusal is None and bool(reply.commands) and self.workflow.state != "verify"
        in_done = self.workflow.state == "done"
        allowed = in_done and not changing and self.workflow.verified(self.turn)
        if reply.task_complete and not allowed:
            why = (f"completion is only accepted in done (you are in {self.workflow.state})"
                   if not in_done else "commands typed outside verify are a change; verify "
                   "again (done -> verify) before completing")
            notes.append(f"[workflow] task_complete ignored: {why}.")
        self._ran_commands = refusal is None
        return Review(allow_complete=allowed, run_commands=refusal is None, notes=notes)

    def after_turn(self, reply: Reply) -> None:
        self.workflow.record_commands(self.turn, self._ran_commands and bool(reply.commands))

    def display(self) -> str:
        return self.workflow.display()

    def result_extra(self) -> dict[str, object]:
        return {"final_state": self.workflow.state,
                "state_history": [[s, t] for s, t in self.workflow.history],
                "refusals": self.workflow.refusals}


@agent
def statem(
    max_episodes: int = 200,
    temperature: float | None = None,
    reply_format: ReplyFormat = "json",
    context_window: int | None = None,
    summarise_free_tokens: int = 8_000,
    wait_mode: WaitMode = "fixed",
    observation_limit: int = OBSERVATION_LIMIT,
    agent_timeout_sec: float | None = None,
    prompts: str = "rsr",
    fixes: str | list[str] | None = None,
    record_tokens: str | None = None,
    token_budget: int | None = TOKEN_BUDGET,
    **options: Any,
) -> Agent:
    """Terminal harness with a persistent, checked workflow state machine.

    Args:
        max_episodes: Model turns before the run stops.
        temperature: Sampling temperature; None leaves the provider's default. Recorded.
        reply_format: "json" or "xml" (both carry a `next_state` field).
        context_window: Context size in tokens; None uses the model's known context length.
        summarise_free_tokens: Summarise when fewer free tokens than this remain.
        wait_mode: "fixed" or "adaptive" waiting after each command. Recorded.
        observation_limit: Bytes of terminal output kept per observation (head and tail).
        agent_timeout_sec: Override of the task's agent timeout (invalid for leaderboards).
        prompts: Prompt pack of the shared Terminus 2 loop (rsr, harbor or a directory).
        fixes: Reference quirks to correct (see rsr/terminus2); none = parity mode.
        record_tokens: "engine" or a tokenizer: per-call token ids (see rsr.harness.tokens).
        token_budget: Tokens (prompt + completion, all model calls) before the run stops;
            0 or null: no budget.
    """
    check_options("rsr/statem", "-S", statem, locals())
    config = option_model("rsr/statem", "-S", Terminus2Config,
        max_episodes=max_episodes, temperature=temperature, reply_format=reply_format,
        context_window=context_window, summarise_free_tokens=summarise_free_tokens,
        wait_mode=wait_mode, observation_limit=observation_limit,
        agent_timeout_sec=agent_timeout_sec, prompts=prompts, fixes=parse_fixes(fixes),
        record_tokens=record_tokens, token_budget=token_budget or None)

    async def execute(state: AgentState) -> AgentState:
        return await StateMHarness(config)(state)

    return stepwise(execute)
