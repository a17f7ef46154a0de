"""The verifier's integrity verdicts of a run, counted from its samples' score metadata.

The verifier records, per sample, `score.metadata["integrity"]` = {mode: "strict"|"warn",
isolation, verdict: "clean"|"warning"|"tampered"|"live-state"|"unchecked", paths: [...], survivors: [...]}
and sets `error = "tampered"` when the integrity audit failed the sample. A sample's verdict is

- `tampered`: the verifier failed it for tampering;
- `warning`: the audit found suspicious changes or surviving processes but did not fail the
  sample (warn mode);
- `live-state`: processes outlived the tests and nothing else was found (strict mode cannot
  carry live state: not verifiable, yet no accusation; `error = "live_state"` on a pass);
- `clean`: audited and nothing found;
- `unknown`: no integrity record (a log from a verifier without the audit) or an unaudited
  sandbox (`unchecked`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Verdict = Literal["clean", "warning", "tampered", "live-state", "unknown"]
TAMPERED = "tampered"


class IntegritySummary(BaseModel):
    """Counts of sample verdicts, and the integrity mode and isolation the run was verified in."""

    model_config = ConfigDict(extra="forbid")

    mode: str = Field(default="unknown", description='"strict" or "warn" when every sample agrees; '
                      '"mixed" when they differ; "unknown" when samples carry no integrity record')
    clean: int = 0
    warning: int = 0
    tampered: int = 0
    live_state: int = Field(0, description="not verifiable under strict: live state, no accusation")
    unknown: int = 0
    isolation: dict[str, int] = Field(default_factory=dict, description="samples per isolation")

    @property
    def strict(self) -> bool:
        return self.mode == "strict"


def sample_verdict(score_metadata: dict[str, Any] | None) -> Verdict:
    meta = score_metadata or {}
    record = meta.get("integrity")
    if meta.get("error") == TAMPERED:
        return "tampered"
    if not isinstance(record, dict):
        return "unknown"
    verdict = record.get("verdict")
    if verdict in ("clean", "warning", "tampered", "live-state"):
        return verdict
    if verdict is not None:  # "unchecked": a sandbox the verifier could not audit
        return "unknown"
    # a record without a verdict: infer it from the findings
    return "warning" if record.get("paths") or record.get("survivors") else "clean"


def verified(score_metadata: dict[str, Any] | None) -> bool:
    """Whether the tests ran for this score. An infrastructure failure, or a sample that ended
    before its tests could run (rsr.verify.outcome: its error names why), has no verdict to vouch
    for: it is a failure in every number, and an audit has nothing to say about it."""
    meta = score_metadata or {}
    if isinstance(meta.get("integrity"), dict) or meta.get("error") == TAMPERED:
        return True
    return not (isinstance(meta.get("infra"), dict) or meta.get("error"))


def summarize(score_metadata: Iterable[dict[str, Any] | None]) -> IntegritySummary:
    """The verdicts of the verified samples (`verified`)."""
    verdicts: Counter[str] = Counter()
    modes: set[str] = set()
    isolation: Counter[str] = Counter()
    for meta in score_metadata:
        if not verified(meta):
            continue
        verdicts[sample_verdict(meta)] += 1
        record = (meta or {}).get("integrity")
        if isinstance(record, dict):
            modes.add(str(record.get("mode", "unknown")))
            isolation[str(record.get("isolation", "unknown"))] += 1
        else:
            modes.add("unknown")
    mode = "unknown" if not modes else modes.pop() if len(modes) == 1 else "mixed"
    return IntegritySummary(mode=mode, isolation=dict(sorted(isolation.items())),
                            live_state=verdicts["live-state"],
                            **{k: verdicts[k] for k in ("clean", "warning", "tampered", "unknown")})
