"""`rsr/terminus2`: the generic terminal harness (a reimplementation of Terminus 2's behaviour).

The model drives a tmux session in the sample's sandbox through JSON (or XML) replies.
`TerminalHarness` holds the loop; StateM and RSRT subclass it and override its hooks.
"""

from __future__ import annotations

import hashlib
import math
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
from inspect_ai.agent import Agent, AgentState, agent
from inspect_ai.log import transcript
from inspect_ai.model import (
    ChatMessage,
    ChatMessageAssistant,
    ChatMessageSystem,
    GenerateConfig,
    Model,
    ModelOutput,
    get_model,
)
from inspect_ai.solver._task_state import sample_state
from inspect_ai.util import SandboxEnvironment, sandbox, span, store
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from rsr.errors import RsrError
from rsr.harness import prompts
from rsr.harness.context import (
    ContextOverflowError,
    count_tokens,
    is_overflow_error,
    summarise,
)
from rsr.harness.control import Kind, assistant_message, turn_meta, user_message
from rsr.harness.prompts.pack import PromptPack, prompt_pack
from rsr.harness.protocol import (
    MAX_DURATION,
    ParseResult,
    Reply,
    ReplyFormat,
    parse_reply_result,
    salvage_xml,
)
from rsr.harness.reply_text import as_reference_client
from rsr.harness.steps import stepwise
from rsr.harness.task_extras import find_skills, mcp_section, skills_section
from rsr.harness.tmux import TmuxSession
from rsr.harness.tmux_install import ensure_tmux
from rsr.harness.tokens import record_call
from rsr.options import check_options, option_model

if TYPE_CHECKING:  # pragma: no cover
    from rsr.tasks.load import LoadedTask

OBSERVATION_LIMIT = 10_000
HARNESS_VERSION = "2.0"
STORE_SETTINGS = "rsr_harness"
STORE_RESULT = "rsr_harness_result"  # = rsr.verify.scorer.HARNESS_RESULT (the scorer reads it)
# The reference's turn limit: effectively none (the agent timeout ends a run).
MAX_EPISODES = 1_000_000
# Free tokens the reference unwinds the conversation to after a context-length error.
UNWIND_FREE_TOKENS = 4_000
# Characters of the screen the reference keeps in its short-summary fall-backs.
FALLBACK_SCREEN_CHARS = 1_000
# Tokens (prompt + completion, summed over every model call of a sample) before the run stops:
# generous for a long task, but a runaway loop stops before it costs real money.
TOKEN_BUDGET = 10_000_000
# The same reply refused this many times in a row ends the run: a scripted or stuck model that
# repeats a reply the harness will not take would otherwise burn every episode.
IDENTICAL_REFUSALS = 5

WaitMode = Literal["fixed", "adaptive"]
EndReason = Literal["completed", "max_episodes", "agent_timeout", "context_overflow",
                    "verified", "reflection_limit", "budget", "shell_exited",
                    "token_budget", "repeated_refusal"]
Fix = Literal["history-limit", "new-output", "cap-once", "keys", "parse-flag"]
FIXES: dict[str, str] = {
    "history-limit": "the pane keeps the configured history (the reference sets history-limit "
                     "after its pane exists, which keeps tmux's default 2,000 lines)",
    "new-output": "new output is found by position in the pane, not by searching the previous "
                  "capture's text (which loses output once the history scrolls)",
    "cap-once": "an observation is capped once with the true omitted count (the reference caps "
                "it twice, so over the cap its model is told how many bytes the second cut left "
                "out)",
    "keys": "keystrokes are typed as written (the reference hands them to tmux as arguments, "
            "which eats a trailing `;` as a command separator)",
    "parse-flag": "a reply is a parse error when the parser says so (the reference decides by "
                  "the text `ERROR:` in its feedback, so a warning quoting it discards the reply)",
}

_TEMPLATE_VERSION = prompts.PROMPT_VERSION


class Terminus2Config(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_episodes: int = Field(MAX_EPISODES, ge=1, description="Model turns before the run "
                              "stops (the reference's default: effectively unbounded).")
    temperature: float | None = Field(
        None, description="Sampling temperature; None leaves the provider default (recorded).")
    reply_format: ReplyFormat = Field("json", description="json or xml replies.")
    context_window: int | None = Field(
        None, ge=1, description="Tokens; None = the model's known context length, if any.")
    summarise_free_tokens: int = Field(
        8_000, ge=0, description="Summarise when fewer free context tokens than this remain.")
    output_limit: int | None = Field(
        None, ge=1, description="The model's output token limit, named when a reply is cut "
                                "off (None: the reply is said to exceed the maximum length).")
    wait_mode: WaitMode = Field(
        "fixed", description="fixed: wait each command's duration; adaptive: return early "
                             "when the shell is idle again.")
    observation_limit: int = Field(OBSERVATION_LIMIT, ge=200, description="Bytes kept.")
    agent_timeout_sec: float | None = Field(
        None, gt=0, description="Override of the task's agent timeout (not for leaderboards).")
    prompts: str = Field("rsr", description="Prompt pack: rsr, harbor or a directory.")
    fixes: list[Fix] = Field(default_factory=list, description="Reference quirks corrected.")
    keep_reasoning: bool = Field(False, description="Send earlier turns' reasoning back.")
    prompt_version: str = Field(_TEMPLATE_VERSION, description="StateM/RSRT templates.")
    private_guidance: str | None = Field(
        None, description="Text put before the conversation in every model call as a system "
                          "message and never recorded in the run's messages (RSR executor "
                          "runbooks). Logs record only its sha256.")
    record_tokens: str | None = Field(
        None, description="Record each call's prompt/completion token ids and logprobs in the "
                          "sample store (rsr.harness.tokens): 'engine' (as the serving engine "
                          "returned them) or a tokenizer to recompute them with where the "
                          "provider returns none (recorded as recomputed).")
    token_budget: int | None = Field(
        TOKEN_BUDGET, ge=1, description="Tokens (prompt + completion over all model calls) "
                                        "before the run stops; None: no budget.")
    identical_refusals: int = Field(
        IDENTICAL_REFUSALS, ge=1, description="The same reply refused (unparsable, or its "
                                              "commands or completion withheld) this many "
                                              "times in a row ends the run.")


def parse_fixes(value: str | list[str] | None) -> list[Fix]:
    """`fixes="history-limit,new-output"`, a list, or `all`."""
    if value is None or value == "":
        return []
    names = value.split(",") if isinstance(value, str) else list(value)
    names = [n.strip() for n in names if n.strip()]
    if names == ["all"]:
        return list(FIXES)  # type: ignore[arg-type]
    unknown = [n for n in names if n not in FIXES]
    if unknown:
        raise RsrError(f"fixes: unknown {', '.join(unknown)}; known: {', '.join(FIXES)}, all")
    return names  # type: ignore[return-value]


@dataclass
class Review:
    """A harness's verdict on a parsed reply, before anything is typed."""

    allow_complete: bool = True
    run_commands: bool = True
    notes: list[str] = field(default_factory=list)
    """Control text shown to the model with the next observation."""


def cap_observation(text: str, limit: int = OBSERVATION_LIMIT,
                    words: PromptPack | None = None) -> str:
    """Keep the first and last `limit // 2` UTF-8 bytes of `text` (the reference's cap)."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    half = limit // 2
    head = data[:half].decode("utf-8", errors="ignore")
    tail = data[-half:].decode("utf-8", errors="ignore")
    omitted = len(data) - len(head.encode()) - len(tail.encode())
    words = words or prompt_pack("rsr")
    return words.render("output_limited", head=head, max_bytes=limit, omitted=omitted,
                        tail=tail)


def _now() -> str:
    return datetime.now(UTC).isoformat()


class _EpisodesSpent(Exception):
    """Output-length retries used up max_episodes; `prompt` is the one left unsent."""

    def __init__(self, prompt: ChatMessage) -> None:
        super().__init__("max_episodes reached while retrying cut-off replies")
        self.prompt = prompt


class _OutputTooLong(Exception):
    def __init__(self, output: ModelOutput) -> None:
        super().__init__("the reply was cut off at the output limit")
        self.output = output


class TerminalHarness:
    """One run of a terminal harness on one sample. Subclasses override the hooks below.

    The loop follows the reference (Harbor 0.26's Terminus 2) step by step, so that the same
    model replies produce the same messages: a pending prompt is sent with the conversation
    so far; the reply is parsed; a parse error is answered without typing anything; otherwise
    the commands are typed and the next prompt is the framed, capped terminal output (or the
    confirmation question after a first `task_complete`). Words come from the prompt pack.
    """

    name = "terminus2"
    reply_model: type[Reply] = Reply

    def __init__(self, config: Terminus2Config) -> None:
        self.config = config
        self.words = prompt_pack(config.prompts)
        self.messages: list[ChatMessage] = []   # everything, for the log
        self.context: list[ChatMessage] = []    # the conversation the model is sent
        self.turn = 0
        self.attempt_turns = 0
        self.end_reason: EndReason | None = None
        self.last_output: ModelOutput | None = None
        self.compactions: list[dict[str, Any]] = []
        self.turn_timings: list[dict[str, float]] = []
        self.instruction = ""
        self.metadata: dict[str, Any] = {}
        self.task: LoadedTask | None = None
        self.deadline_sec: float | None = None
        self.started = 0.0
        self._model: Model | None = None
        self._tmux: TmuxSession | None = None
        self._sbx: SandboxEnvironment | None = None
        self._window: int | None = None
        self.tokens_used = 0
        self._refused_reply: str | None = None
        self._refused_streak = 0
        # Replies refused as unparsable (nothing of them ran), and of those the empty ones: the
        # reference answers both with its parse-error prompt, so only these counts tell them apart.
        self.parse_errors = 0
        self.empty_replies = 0

    # ------------------------------------------------------------------ hooks

    def extra_instructions(self) -> str:
        """Text added after the first prompt and hand-offs (StateM's workflow rules)."""
        return ""

    def review(self, reply: Reply) -> Review:
        """Called before a reply's commands run: may withhold them or the completion."""
        return Review()

    def after_turn(self, reply: Reply) -> None:
        """Called after a reply's commands ran and their output was read."""

    def display(self) -> str:
        """Control text shown with every observation (StateM's workflow state)."""
        return ""

    async def on_completed(self, terminal_state: str) -> ChatMessage | None:
        """After a confirmed completion: None ends the run, a message continues it."""
        self.end_reason = "completed"
        return None

    async def on_exhausted(self, terminal_state: str) -> ChatMessage | None:
        """After max_episodes turns without completion: None ends the run."""
        self.end_reason = "max_episodes"
        return None

    def timeout_sec(self) -> float | None:
        if self.config.agent_timeout_sec is not None:
            return self.config.agent_timeout_sec
        value = self.metadata.get("agent_timeout_sec")
        return float(value) if value else None

    def settings(self) -> dict[str, Any]:
        return {
            "harness": self.name,
            "harness_version": HARNESS_VERSION,
            "harness_implementation": "rsr",
            "parity_mode": not self.config.fixes,
            "prompt_version": self.config.prompt_version,
            "prompt_digest": prompts.prompt_digest(self.config.prompt_version),
            **self.words.describe(),
            **self.config.model_dump(exclude={"private_guidance"}),
            "private_guidance_sha256": (
                hashlib.sha256(self.config.private_guidance.encode()).hexdigest()
                if self.config.private_guidance else None),
            "context_window_resolved": self.context_window(),
            "agent_timeout_resolved_sec": self.deadline_sec,
        }

    # ------------------------------------------------------------------ run

    async def __call__(self, state: AgentState) -> AgentState:
        sample = sample_state()
        self.metadata = dict(sample.metadata) if sample is not None else {}
        self.task = _task(self.metadata)
        self.instruction = _instruction(state.messages, self.metadata)
        self._model = get_model()
        self.deadline_sec = self.timeout_sec()
        settings = self.settings()
        store().set(STORE_SETTINGS, settings)
        transcript().info(settings, source=f"rsr/{self.name} settings")
        # As in the reference, starting the terminal is setup: the agent timeout starts after it.
        await self._setup()
        self.started = time.monotonic()
        with anyio.move_on_after(self.deadline_sec or math.inf) as scope:
            # A model call that fails after the provider's retries ends the sample in an error:
            # rsr.verify.outcome, the one place a sample's end is classified, scores it (infra
            # `model`, or the agent's when the request itself was refused), and Inspect's
            # retry_on_error may run it again.
            try:
                await self._run()
            finally:
                if self._tmux is not None:
                    with anyio.CancelScope(shield=True):
                        await self._tmux.close()
                state.messages = list(self.messages)
                if self.last_output is not None:
                    state.output = self.last_output
        if scope.cancelled_caught:
            self.end_reason = "agent_timeout"
            transcript().info(f"agent timeout after {self.deadline_sec:g} s: the run stops here "
                              "and the sample is scored as it stands", source=f"rsr/{self.name}")
        result = {"end_reason": self.end_reason, "turns": self.turn,
                  "elapsed_sec": round(time.monotonic() - self.started, 3),
                  "tokens_used": self.tokens_used, "parse_errors": self.parse_errors,
                  "empty_replies": self.empty_replies,
                  "compactions": self.compactions, **self.result_extra()}
        store().set(STORE_RESULT, result)
        transcript().info(result, source=f"rsr/{self.name} result")
        return state

    def result_extra(self) -> dict[str, Any]:
        return {}

    def context_window(self) -> int | None:
        if self.config.context_window is not None:
            return self.config.context_window
        if self._model is None:
            return None
        if self._window is None:
            from inspect_ai.model._model_info import get_model_info

            try:
                info = get_model_info(self._model)
            except Exception:  # unknown models: no proactive summarising, errors still degrade
                info = None
            self._window = (info.context_length if info is not None else None) or 0
        return self._window or None

    @property
    def _extra_tags(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.reply_model.model_fields) - set(Reply.model_fields)))

    @property
    def _xml(self) -> bool:
        return self.config.reply_format == "xml"

    def _with_extra(self, text: str) -> tuple[str, list[str]]:
        extra = [p for p in (self.extra_instructions(), self.display()) if p]
        return ("\n\n".join([text, *extra]), extra) if extra else (text, [])

    async def _setup(self) -> None:
        self._sbx = sandbox()
        how = await ensure_tmux(self._sbx, bool(self.metadata.get("allow_internet", False)),
                                str(self.metadata.get("task_name", "")))
        if how == "installed":
            transcript().info("tmux was missing and has been installed", source=self.name)
        self._tmux = TmuxSession(self._sbx, cwd=self.metadata.get("workdir"),
                                 user=self._agent_user(),
                                 history_before_start="history-limit" in self.config.fixes,
                                 literal_semicolons="keys" in self.config.fixes)
        await self._tmux.start()

    async def _run(self) -> None:
        assert self._tmux is not None
        terminal_state = await self._observe()
        first = self.words.render("first_xml" if self._xml else "first_json",
                                  instruction=self.instruction + await self._task_extras(),
                                  terminal_state=terminal_state)
        content, extra = self._with_extra(first)
        prompt: ChatMessage = user_message(
            content, "first_prompt", self.name, turn=0,
            public=first if extra else None, control_parts=extra, control=False)
        pending = False
        while True:
            if self.attempt_turns >= self.config.max_episodes:
                self._append(prompt, context=False)
                message = await self.on_exhausted(await self._screen())
                if message is None:
                    return
                self.attempt_turns = 0
                pending = False
                prompt = message
                continue
            budget = self.config.token_budget
            if budget is not None and self.tokens_used >= budget:
                self._append(prompt, context=False)
                self.end_reason = "token_budget"
                transcript().info(f"token budget spent ({self.tokens_used:,} of {budget:,} "
                                  "tokens): the run stops here and the sample is scored as it "
                                  "stands (-S token_budget=N raises it)", source=self.name)
                return
            if not await self._tmux.alive():
                # The reference ends the run when its shell is gone (e.g. the model typed exit).
                self._append(prompt, context=False)
                self.end_reason = "shell_exited"
                transcript().info("the shell exited: the run ends", source=self.name)
                return
            self.turn += 1
            self.attempt_turns += 1
            async with span(f"turn {self.turn}", type="turn"):
                outcome = await self._turn(prompt, pending)
            if outcome is None:
                return
            prompt, pending = outcome

    async def _turn(self, prompt: ChatMessage,
                    pending: bool) -> tuple[ChatMessage, bool] | None:
        """One model turn. Returns the next prompt and whether a completion awaits
        confirmation, or None when the run is over."""
        assert self._tmux is not None
        turn_start = time.monotonic()
        started_at = _now()
        prompt = await self._maybe_compact(prompt)
        try:
            output = await self._query(prompt)
        except _EpisodesSpent as e:
            return e.prompt, pending
        if output is None:
            self.end_reason = "context_overflow"
            return None
        model_s = time.monotonic() - turn_start
        timing = {"model_s": round(model_s, 4)}
        result = parse_reply_result(output.completion, self.config.reply_format, self.words,
                                    self._extra_tags)
        feedback = ""
        if result.error:
            feedback = self.words.render("feedback_error", error=result.error)
            if result.warning:
                feedback += self.words.render("feedback_error_warnings", warnings=result.warning)
        elif result.warning:
            feedback = self.words.render("feedback_warnings", warnings=result.warning)
        warnings = [w.removeprefix("- ") for w in result.warning.split("\n") if w]

        # The reference decides by its feedback's text: a warning that quotes `ERROR:` makes
        # the reply a parse error too (nothing runs).
        error = result.error
        if not error and "ERROR:" in feedback and "parse-flag" not in self.config.fixes:
            error = feedback
        if error:
            self.parse_errors += 1
            empty = not output.completion.strip()
            self.empty_replies += empty
            self._append(_with_parse(assistant_message(
                output, "invalid_reply", self.name, turn=self.turn, timing=timing,
                started_at=started_at, warnings=warnings), error=error), context=False)
            transcript().info(f"parse error{' (an empty reply)' if empty else ''}: {error}",
                              source=self.name)
            response_type = self.words.render("response_type_xml" if self._xml
                                              else "response_type_json")
            text = self.words.render("parse_error", feedback=feedback,
                                     response_type=response_type)
            self._record_timing(timing, turn_start, 0.0)
            if self._refused_again(output.completion, f"parse error: {error}"):
                return None
            return user_message(text, "parse_error", self.name, turn=self.turn), pending

        reply = self._reply(result)
        reply_message = _with_parse(assistant_message(
            output, "reply", self.name, turn=self.turn, timing=timing, started_at=started_at,
            warnings=warnings), task_complete=result.task_complete,
            commands=[c.model_dump() for c in result.commands],
            analysis=str(result.analysis or ""), plan=str(result.plan or ""))
        self._append(reply_message, context=False)
        if warnings:
            transcript().info("reply warnings: " + " ".join(warnings), source=self.name)
        review = self.review(reply)

        # wait_s is the time spent typing and waiting (one exec per command in adaptive mode);
        # with a fixed wait, the pure sleep is what counts as waiting.
        wait_s = 0.0
        for command in result.commands if review.run_commands else []:
            waited = await self._tmux.send_and_wait(
                command.keystrokes, min(command.duration, MAX_DURATION),
                adaptive=self.config.wait_mode == "adaptive")
            wait_s += waited.waited if self.config.wait_mode == "adaptive" \
                else max(command.duration, 0.0)
        mark = time.monotonic()
        terminal_output = await self._observe()
        timing["read_s"] = round(time.monotonic() - mark, 4)
        self.after_turn(reply)
        self._record_timing(timing, turn_start, wait_s)
        reply_message.metadata["rsr"]["timing"] = dict(timing)  # type: ignore[index]

        complete = result.task_complete and review.allow_complete
        refused = not review.run_commands or (result.task_complete and not review.allow_complete)
        if self._refused_again(output.completion if refused else None, "; ".join(review.notes)):
            return None
        notes = [*review.notes, *([self.display()] if self.display() else [])]
        if complete and pending:
            message = await self.on_completed(terminal_output)
            if message is None:
                # Never sent, but the reference's trajectory shows it as the step's observation.
                reply_message.metadata[PARSE_KEY]["final_observation"] = terminal_output  # type: ignore[index]
                return None
            self.attempt_turns = 0
            return message, False
        if complete:
            body = self.words.render("confirm_xml" if self._xml else "confirm_json",
                                     terminal_state=terminal_output)
            content = "\n\n".join([body, *notes])
            return user_message(content, "confirm", self.name, turn=self.turn,
                                public=terminal_output, control_parts=[body, *notes],
                                control=True), True
        # The reference caps the output again here (it was capped once when read): over the
        # cap, the second cut is what the model is told about.
        body = terminal_output if "cap-once" in self.config.fixes else self._cap(terminal_output)
        control_parts: list[str] = []
        if feedback:
            body = self.words.render("warnings", feedback=feedback, output=body)
            control_parts.append(body)
        content = "\n\n".join([body, *notes])
        kind: Kind = "state_display" if self.display() else "observation"
        is_control = bool(control_parts or notes)
        return user_message(content, kind, self.name, turn=self.turn,
                            public=terminal_output if is_control else None,
                            control_parts=control_parts + notes, control=is_control), False

    def _refused_again(self, reply: str | None, why: str) -> bool:
        """Count `reply` (None: the reply was taken) against the identical-refusals limit;
        True (and the run's end recorded) when the limit is reached."""
        if reply is None:
            self._refused_reply, self._refused_streak = None, 0
            return False
        self._refused_streak = self._refused_streak + 1 if reply == self._refused_reply else 1
        self._refused_reply = reply
        if self._refused_streak < self.config.identical_refusals:
            return False
        self.end_reason = "repeated_refusal"
        transcript().info(f"the model sent the same refused reply {self._refused_streak} times "
                          f"in a row ({why.strip() or 'refused'}): the run stops here and the "
                          "sample is scored as it stands", source=self.name)
        return True

    # ------------------------------------------------------------------ model calls

    def _reply(self, result: ParseResult) -> Reply:
        data = {**result.data, "analysis": str(result.analysis or ""),
                "plan": str(result.plan or ""), "commands": result.commands,
                "task_complete": result.task_complete}
        try:
            return self.reply_model.model_validate(data)
        except ValidationError:  # harness extras (next_state) of the wrong type: ignored
            return Reply.model_validate({k: data[k] for k in
                                         ("analysis", "plan", "commands", "task_complete")})

    def _sent(self, output: ModelOutput) -> ChatMessage:
        """The assistant message as the conversation keeps it: its text only, unless
        earlier reasoning is kept (the reference drops it by default)."""
        if self.config.keep_reasoning:
            return output.message
        return ChatMessageAssistant(content=output.completion, model=output.model,
                                    source="generate")

    async def _query(self, prompt: ChatMessage) -> ModelOutput | None:
        """Send `prompt` after the conversation; on success both join it (as in the reference,
        whose chat appends the prompt and the reply together)."""
        try:
            output = await self._generate([*self.context, prompt])
        except ContextOverflowError as e:
            return await self._recover_overflow(prompt, str(e))
        except _OutputTooLong as e:
            return await self._recover_too_long(prompt, e.output)
        self._append(prompt, context=False)
        self.context += [prompt, self._sent(output)]
        self.last_output = output
        return output

    async def _recover_too_long(self, prompt: ChatMessage, output: ModelOutput) -> ModelOutput | None:
        truncated = output.completion
        salvaged = salvage_xml(truncated, self.words) if self._xml else None
        if salvaged is not None:
            # Harbor 0.26 means to use the complete part (its code crashes on this path).
            kept = output.model_copy(deep=True)
            kept.choices[0].message = ChatMessageAssistant(content=salvaged, source="generate")
            self._append(prompt, context=False)
            self.context += [prompt, self._sent(kept)]
            self.last_output = kept
            return kept
        self._append(prompt, context=False)
        self._append(_with_parse(assistant_message(
            output, "invalid_reply", self.name, turn=self.turn, timing={}, started_at=_now()),
            error="output length exceeded", stop_reason=str(output.stop_reason)), context=False)
        limit = (self.words.render("output_limit_tokens", tokens=self.config.output_limit)
                 if self.config.output_limit else self.words.render("output_limit_unknown"))
        text = self.words.render("output_too_long", limit=limit)
        parsed = parse_reply_result(truncated, self.config.reply_format, self.words,
                                    self._extra_tags)
        if parsed.warning:
            text += self.words.render("output_too_long_warnings", warnings=parsed.warning)
        self.context += [prompt, ChatMessageAssistant(content=truncated, source="generate")]
        transcript().info("reply cut off at the output limit: nothing of it runs",
                          source=self.name)
        retry = user_message(text, "parse_error", self.name, turn=self.turn)
        # The reference asks again within the same episode, without limit; a retry counts
        # against max_episodes here, so a model that is always cut off still stops.
        self.attempt_turns += 1
        if self.attempt_turns > self.config.max_episodes:
            raise _EpisodesSpent(retry)
        return await self._query(retry)

    async def _generate(self, messages: list[ChatMessage]) -> ModelOutput:
        assert self._model is not None
        config = GenerateConfig(temperature=self.config.temperature)
        if self.config.private_guidance:
            # Only the model call sees the guidance: self.messages (the public history) never does.
            messages = [ChatMessageSystem(content=self.config.private_guidance), *messages]
        try:
            output = await self._model.generate(messages, config=config)
        except Exception as e:
            if is_overflow_error(e):
                raise ContextOverflowError(str(e)) from e
            raise
        if output.usage is not None:
            self.tokens_used += output.usage.total_tokens
        if self.config.record_tokens:
            record_call(messages, output, self.config.record_tokens)
        output = as_reference_client(output)
        if output.stop_reason == "model_length":
            raise ContextOverflowError("the model reported stop_reason=model_length")
        if output.stop_reason == "max_tokens":
            raise _OutputTooLong(output)
        return output

    async def _generate_plain(self, messages: list[ChatMessage]) -> ModelOutput:
        """A summarisation call: a cut-off reply is used as it is."""
        try:
            return await self._generate(messages)
        except _OutputTooLong as e:
            return e.output

    # ------------------------------------------------------------------ context pressure

    def _used_tokens(self) -> int:
        return count_tokens(self.context)

    async def _maybe_compact(self, prompt: ChatMessage) -> ChatMessage:
        """Before a call: summarise when the conversation leaves too little room (the pending
        prompt is then replaced by the hand-off, as in the reference)."""
        window = self.context_window()
        if window is None or not self.context or self.config.summarise_free_tokens <= 0:
            return prompt
        free = window - self._used_tokens()
        if free >= self.config.summarise_free_tokens:
            return prompt
        try:
            handoff = await self._summarise()
        except Exception as e:  # the reference logs and carries on with the long context
            transcript().info(f"proactive summarisation failed: {e}", source=self.name)
            return prompt
        self._append(prompt, context=False)
        self._record_compaction("summary", f"free context {free} < "
                                f"{self.config.summarise_free_tokens} tokens")
        return handoff

    async def _summarise(self) -> ChatMessage:
        """Summary, questions, answers; the conversation becomes [first prompt, questions
        prompt, questions] and the hand-off (with the answers) is the next prompt."""
        assert self._tmux is not None
        screen = await self._tmux.capture_pane()
        handoff = await summarise(self._generate_plain, self.context, words=self.words,
                                  instruction=self.instruction, screen=screen,
                                  harness=self.name, turn=self.turn, now=_now)
        for message in handoff.log:
            self._append(message, context=False)
        self.context = handoff.context
        text, extra = self._with_extra(handoff.prompt)
        return user_message(text, "handoff", self.name, turn=self.turn,
                            control_parts=extra)

    async def _recover_overflow(self, prompt: ChatMessage, reason: str) -> ModelOutput | None:
        """The reference's fall-backs after a context-length error: unwind to 4,000 free
        tokens, then a full summary, else a short one, else the instruction and the screen."""
        assert self._tmux is not None
        self._append(prompt, context=False)
        window = self.context_window()
        while len(self.context) > 1 and window is not None and \
                window - self._used_tokens() < UNWIND_FREE_TOKENS:
            self.context = self.context[:-2]
        level = "summary"
        handoff: ChatMessage | None = None
        try:
            handoff = await self._summarise()
        except Exception as e:
            transcript().info(f"full summary failed: {e}", source=self.name)
        if handoff is None:
            screen = (await self._tmux.capture_pane())[-FALLBACK_SCREEN_CHARS:]
            try:
                short = await self._generate_plain([user_message(
                    self.words.render("short_summary", instruction=self.instruction,
                                      screen=screen), "summary_request", self.name,
                    turn=self.turn)])
                level = "short_summary"
                text = self.words.render("short_handoff", instruction=self.instruction,
                                         summary=short.completion)
            except Exception as e:
                transcript().info(f"short summary failed: {e}", source=self.name)
                level = "bare"
                screen = (await self._tmux.capture_pane())[-FALLBACK_SCREEN_CHARS:]
                text = self.words.render("bare_handoff", instruction=self.instruction,
                                         screen=screen)
            handoff = user_message(text, "handoff", self.name, turn=self.turn)
        self._record_compaction(level, f"context-length error: {reason}")
        try:
            output = await self._generate([*self.context, handoff])
        except Exception as e:  # as the reference: a stand-in reply, which fails to parse
            transcript().info(f"even the hand-off call failed: {e}", source=self.name)
            self._append(handoff, context=False)
            output = ModelOutput.from_content(
                str(self._model) if self._model else "model",
                self.words.render("fallback_reply"))
            self.last_output = output
            return output
        self._append(handoff, context=False)
        self.context += [handoff, self._sent(output)]
        self.last_output = output
        return output

    def _record_compaction(self, level: str, reason: str) -> None:
        self.compactions.append({"turn": self.turn, "level": level, "reason": reason})
        transcript().info(f"context compacted ({level}): {reason}", source=self.name)

    # ------------------------------------------------------------------ helpers

    def _append(self, message: ChatMessage, context: bool) -> None:
        self.messages.append(message)
        if context:
            self.context.append(message)
        meta = turn_meta(message)
        if meta is not None and meta.control and message.role == "user":
            # Shown in `inspect view`'s transcript, so a reader sees which words the harness
            # (not the task or the terminal) put in front of the model.
            words = "\n\n".join(meta.control_parts) if meta.control_parts else message.text
            transcript().info(f"harness control ({meta.kind}):\n{words}",
                              source=f"rsr/{self.name} control")

    def _record_timing(self, timing: dict[str, float], turn_start: float, wait_s: float) -> None:
        total = time.monotonic() - turn_start
        timing["wait_s"] = round(wait_s, 4)
        timing["total_s"] = round(total, 4)
        timing["overhead_s"] = round(total - timing["model_s"] - wait_s, 4)
        self.turn_timings.append(dict(timing))

    def _agent_user(self) -> str | None:
        """The task's `[agent] user` (the shell runs as that user)."""
        return self.task.config.agent.user if self.task is not None else None

    async def _task_extras(self) -> str:
        """What the first prompt appends to the instruction: the task's MCP servers, then the
        skills found in the sandbox (as the reference does)."""
        if self.task is None:
            return ""
        env = self.task.config.environment
        text = mcp_section(env.mcp_servers, self.words)
        if env.skills_dir and self._sbx is not None:
            text += skills_section(await find_skills(self._sbx, env.skills_dir,
                                                     self._agent_user()))
        return text

    def _cap(self, text: str) -> str:
        return cap_observation(text, self.config.observation_limit, self.words)

    async def _screen(self) -> str:
        assert self._tmux is not None
        return self.words.render("screen", screen=await self._tmux.capture_pane())

    async def _observe(self) -> str:
        """The terminal output after a turn, framed and capped as the reference shows it."""
        assert self._tmux is not None
        if "new-output" in self.config.fixes:
            kind, text = await self._tmux.read_since_mark()
        else:
            kind, text = await self._tmux.incremental_output()
        framed = self.words.render("new_output" if kind == "new" else "screen",
                                   **({"output": text} if kind == "new" else {"screen": text}))
        return self._cap(framed)


PARSE_KEY = "rsr_parse"


def _with_parse(message: ChatMessage, **values: Any) -> ChatMessage:
    """Record what the parser made of a reply (ATIF's tool calls and `extra` come from it)."""
    message.metadata = {**(message.metadata or {}), PARSE_KEY: values}
    return message


def _task(metadata: dict[str, Any]) -> LoadedTask | None:
    """The sample's task, when the sample is an rsr task."""
    if not metadata.get("task_dir"):
        return None
    from rsr.tasks.load import task_from_metadata

    return task_from_metadata(metadata)


def _instruction(messages: list[ChatMessage], metadata: dict[str, Any]) -> str:
    """The task instruction as the reference passes it: instruction.md byte for byte (the
    sample input is the same text, stripped), else the first user message."""
    text = next((m.text for m in messages if m.role == "user"), None)
    if text is None:
        raise ValueError("the sample has no user message to take the task instruction from")
    task_dir = metadata.get("task_dir")
    if task_dir:
        path = Path(task_dir) / "instruction.md"
        raw = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
        if raw.strip() == text.strip():
            return raw
    return text


@agent
def terminus2(
    max_episodes: int = MAX_EPISODES,
    temperature: float | None = None,
    reply_format: ReplyFormat = "json",
    context_window: int | None = None,
    summarise_free_tokens: int = 8_000,
    output_limit: int | None = None,
    wait_mode: WaitMode = "fixed",
    observation_limit: int = OBSERVATION_LIMIT,
    agent_timeout_sec: float | None = None,
    prompts: str = "rsr",
    fixes: str | list[str] | None = None,
    keep_reasoning: bool = False,
    private_guidance: str | None = None,
    record_tokens: str | None = None,
    token_budget: int | None = TOKEN_BUDGET,
    **options: Any,
) -> Agent:
    """Terminus 2 over tmux: Harbor 0.26's loop, wording from a selectable prompt pack.

    Args:
        max_episodes: Model turns before the run stops (default: the reference's, effectively
            unbounded; the agent timeout ends a run).
        temperature: Sampling temperature; None leaves the provider's default. Recorded.
        reply_format: "json" (reference) or "xml".
        context_window: Context size in tokens; None uses the model's known context length.
        summarise_free_tokens: Summarise when fewer free tokens than this remain.
        output_limit: The model's output token limit, named when a reply is cut off.
        wait_mode: "fixed" waits each command's duration (reference); "adaptive" returns as
            soon as the shell is idle again, never later than the duration. Recorded.
        observation_limit: Bytes of terminal output kept per observation (head and tail).
        agent_timeout_sec: Override of the task's agent timeout (invalid for leaderboards).
        prompts: Prompt pack: "rsr" (our wording), "harbor" (read from an installed Harbor)
            or a directory of templates. Logs record its name and sha256.
        fixes: Reference quirks to correct, comma-separated (history-limit, new-output,
            cap-once, keys) or "all"; none = parity mode. Recorded.
        keep_reasoning: Send earlier turns' reasoning back to the model (the reference
            drops it).
        private_guidance: Text the model sees before the conversation in every call but
            which is never part of the recorded messages (the RSR executor's runbook).
        record_tokens: "engine" or a tokenizer: record every call's token ids and logprobs
            in the sample store (see rsr.harness.tokens), for RL training.
        token_budget: Tokens (prompt + completion, all model calls) before the run stops;
            0 or null: no budget.
    """
    check_options("rsr/terminus2", "-S", terminus2, locals())
    config = option_model("rsr/terminus2", "-S", Terminus2Config,
        max_episodes=max_episodes, temperature=temperature, reply_format=reply_format,
        context_window=context_window, summarise_free_tokens=summarise_free_tokens,
        output_limit=output_limit, wait_mode=wait_mode, observation_limit=observation_limit,
        agent_timeout_sec=agent_timeout_sec, prompts=prompts, fixes=parse_fixes(fixes),
        keep_reasoning=keep_reasoning, private_guidance=private_guidance,
        record_tokens=record_tokens, token_budget=token_budget or None)

    async def execute(state: AgentState) -> AgentState:
        return await TerminalHarness(config)(state)

    return stepwise(execute)
