"""Stage 2, compress: a verified success -> task instruction + actions + observations.

Harness control (StateM's workflow display, RSRT's reflection prompts, parse-error detours,
confirmations, summaries) is dropped mechanically from the harness's own marking, through
`rsr.trajectories.public_messages`; what was dropped is recorded with each source.
"""

from __future__ import annotations

from collections.abc import Sequence

from rsr.factory.ledger import FactoryPaths, completed_samples, sample_tokens
from rsr.factory.records import Source, write_rows
from rsr.harness.protocol import parse_reply
from rsr.harness.terminus2 import STORE_RESULT
from rsr.trajectories.messages import public_messages


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


def run(paths: FactoryPaths, keep: tuple[str, ...] = ()) -> list[Source]:
    from rsr.factory.discover import STORE_PRODUCED, score_of

    sources: list[Source] = []
    for _, logged in sorted(completed_samples(paths.logs("discover")).items()):
        sample = logged.sample
        passed, reward = score_of(sample)
        if not passed:
            continue
        meta = sample.metadata or {}
        public = public_messages(sample, keep=keep)
        result = sample.store.get(STORE_RESULT) or {}
        sources.append(Source(
            id=str(sample.id), task=meta["task_name"], task_dir=meta["task_dir"],
            suite=meta["suite"], harness=meta["discover_harness"], epoch=meta["discover_epoch"],
            reward=reward, turns=int(result.get("turns", 0)), tokens=sample_tokens(sample),
            log=str(logged.log), instruction=sample.input if isinstance(sample.input, str)
            else public.messages[0]["content"], messages=public.messages,
            commands=commands_of(public.messages),
            dropped=[{"index": r.index, "kind": r.kind, "action": r.action,
                      "chars": len(r.text)} for r in public.removed],
            produced_files=sample.store.get(STORE_PRODUCED) or {}))
    write_rows(paths.stage_file("sources"), sources)
    return sources
