"""The run report: how a run went as a system, from its Inspect logs alone.

For any set of `.eval` logs: rollouts (samples) per hour of wall time, sandbox start-up p50/p99
(the duration of each sample's `init` span, in which Inspect creates the sample's sandboxes),
model latency p50/p99 (each model call's working time), tokens per second in and out (summed
over calls, divided by the summed call time: the engine's throughput as the agents saw it),
and infrastructure failures by kind (the sample's `infra` record: build, pull, sandbox,
verifier, engine, model, ...). Nothing here needs the run's engine or sandboxes.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field


class RunStats(BaseModel):
    logs: int
    samples: int
    wall_s: float
    rollouts_per_hour: float | None
    sandbox_start_p50_s: float | None
    sandbox_start_p99_s: float | None
    model_calls: int
    model_latency_p50_s: float | None
    model_latency_p99_s: float | None
    tokens_in: int
    tokens_out: int
    tokens_in_per_s: float | None
    tokens_out_per_s: float | None
    infra_failures: dict[str, int] = Field(default_factory=dict)
    models: list[str] = Field(default_factory=list)

    def rows(self) -> list[tuple[str, str]]:
        def f(v: float | None, unit: str = "", digits: int = 2) -> str:
            return "-" if v is None else f"{v:.{digits}f}{unit}"

        infra = ", ".join(f"{k} {v}" for k, v in sorted(self.infra_failures.items())) or "none"
        return [
            ("samples (rollouts)", f"{self.samples} in {self.logs} log(s), {self.wall_s:.0f} s wall"),
            ("rollouts per hour", f(self.rollouts_per_hour, "", 1)),
            ("sandbox start p50 / p99", f"{f(self.sandbox_start_p50_s, ' s')} / {f(self.sandbox_start_p99_s, ' s')}"),
            ("model latency p50 / p99",
             f"{f(self.model_latency_p50_s, ' s')} / {f(self.model_latency_p99_s, ' s')} "
             f"({self.model_calls} calls)"),
            ("tokens per second in / out",
             f"{f(self.tokens_in_per_s, '', 0)} / {f(self.tokens_out_per_s, '', 1)} "
             f"({self.tokens_in:,} in, {self.tokens_out:,} out)"),
            ("infra failures by kind", infra),
            ("models", ", ".join(self.models) or "-"),
        ]


def percentile(values: list[float], q: float) -> float | None:
    """Nearest-rank percentile (q in 0..100); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def _time(value: Any) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return value
    try:
        return datetime.fromisoformat(str(value))
    except ValueError:
        return None


def _init_seconds(sample: Any) -> float | None:
    begin = None
    for event in sample.events or []:
        if event.event == "span_begin" and getattr(event, "name", None) == "init" and begin is None:
            begin = event
        elif event.event == "span_end" and begin is not None and getattr(event, "id", None) == begin.id:
            return (event.timestamp - begin.timestamp).total_seconds()
    return None


def infra_kind(sample: Any) -> str | None:
    """The sample's infrastructure failure kind, wherever rsr recorded it (sample metadata, the
    harness result: a model call that failed, or a score's metadata), else None."""
    records = [(sample.metadata or {}).get("infra"),
               ((getattr(sample, "store", None) or {}).get("rsr_harness_result") or {}).get("infra")]
    records += [(s.metadata or {}).get("infra") for s in (sample.scores or {}).values()]
    for record in records:
        if isinstance(record, dict) and record.get("kind"):
            return str(record["kind"])
        if isinstance(record, str) and record:
            return record
    return None


def run_stats(paths: Iterable[Path]) -> RunStats:
    from inspect_ai.log import read_eval_log

    from rsr.report.logs import readable_logs

    files = readable_logs(list(paths))
    samples = 0
    wall = 0.0
    starts: list[float] = []
    latencies: list[float] = []
    tokens_in = tokens_out = 0
    model_time = 0.0
    infra: Counter[str] = Counter()
    models: set[str] = set()
    for path in files:
        log = read_eval_log(str(path))
        begun, ended = _time(log.stats.started_at), _time(log.stats.completed_at)
        if begun and ended:
            wall += max(0.0, (ended - begun).total_seconds())
        models.add(log.eval.model)
        for sample in log.samples or []:
            samples += 1
            init = _init_seconds(sample)
            if init is not None:
                starts.append(init)
            kind = infra_kind(sample)
            if kind:
                infra[kind] += 1
            for event in sample.events or []:
                if event.event != "model":
                    continue
                seconds = event.working_time if event.working_time is not None else (
                    event.output.time if event.output else None)
                if seconds is None:
                    continue
                latencies.append(float(seconds))
                model_time += float(seconds)
                usage = event.output.usage if event.output else None
                if usage is not None:
                    tokens_in += usage.input_tokens
                    tokens_out += usage.output_tokens
    return RunStats(
        logs=len(files), samples=samples, wall_s=round(wall, 1),
        rollouts_per_hour=round(samples / wall * 3600, 1) if wall > 0 else None,
        sandbox_start_p50_s=percentile(starts, 50), sandbox_start_p99_s=percentile(starts, 99),
        model_calls=len(latencies), model_latency_p50_s=percentile(latencies, 50),
        model_latency_p99_s=percentile(latencies, 99), tokens_in=tokens_in, tokens_out=tokens_out,
        tokens_in_per_s=round(tokens_in / model_time, 1) if model_time > 0 else None,
        tokens_out_per_s=round(tokens_out / model_time, 1) if model_time > 0 else None,
        infra_failures=dict(infra), models=sorted(models))
