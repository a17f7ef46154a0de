"""Stage 2, compress: a verified success -> its Terminus 2 view, plus the run as it was.

What only the source harness shows (StateM's workflow state and notes, RSRT's reflection
prompts) is removed mechanically from the harness's own marking, through
`rsr.trajectories.model_view`; Terminus 2's own messages (confirmation, parse-error feedback,
warnings) stay, because Terminus 2 shows them too. What was removed is recorded with each
source; the run as the source harness's model saw it is kept for the Direct SFT baseline.
"""

from __future__ import annotations

from collections.abc import Sequence

from rsr.factory.ledger import FactoryPaths, sample_tokens
from rsr.factory.records import Source, write_rows
from rsr.harness.protocol import parse_reply
from rsr.harness.terminus2 import STORE_RESULT
from rsr.trajectories.model_view import model_view


def commands_of(messages: Sequence[dict[str, str]]) -> list[str]:
    """The keystrokes the model sent, one entry per command, in order."""
    out: list[str] = []
    for m in messages:
        if m["role"] != "assistant":
            continue
        parsed = parse_reply(m["content"], "json")
        if parsed.reply is None:
            parsed = parse_reply(m["content"], "xml")
        if parsed.reply is not None:
            out += [c.keystrokes for c in parsed.reply.commands]
    return out


def run(paths: FactoryPaths) -> list[Source]:
    from rsr.factory.discover import STORE_PRODUCED, score_of

    sources: list[Source] = []
    for _, logged in sorted(paths.done("discover").items()):
        sample = logged.sample
        passed, reward = score_of(sample)
        if not passed:
            continue
        meta = sample.metadata or {}
        public = model_view(sample, strip_source_control=True)
        raw = model_view(sample, strip_source_control=False)
        result = sample.store.get(STORE_RESULT) or {}
        sources.append(Source(
            id=str(sample.id), task=meta["task_name"], task_dir=meta["task_dir"],
            suite=meta["suite"], harness=meta["discover_harness"], epoch=meta["discover_epoch"],
            reward=reward, turns=int(result.get("turns", 0)), tokens=sample_tokens(sample),
            log=str(logged.log), instruction=sample.input if isinstance(sample.input, str)
            else public.messages[0]["content"], messages=public.messages,
            segments=public.segments, raw_segments=raw.segments,
            commands=commands_of(public.messages),
            dropped=[{"index": r.index, "kind": r.kind, "action": r.action,
                      "chars": len(r.text)} for r in public.removed],
            produced_files=sample.store.get(STORE_PRODUCED) or {}))
    write_rows(paths.stage_file("sources"), sources)
    return sources
