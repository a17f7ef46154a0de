"""A round's evaluation: the round's model on the evaluated tasks, through `rsr eval`'s eval-set
machinery (resumable: a rerun into the same folder runs only what did not finish)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from inspect_ai.log import read_eval_log

from rsr.errors import RsrError
from rsr.report.evalset import EvalSetConfig, SuiteRun, run_eval_set
from rsr.rounds.config import RoundsConfig
from rsr.rounds.serve import Served


@dataclass
class EvalResult:
    passed: int
    n: int
    errors: int
    logs: list[str]

    @property
    def pass_rate(self) -> float:
        return self.passed / self.n if self.n else 0.0


def eval_spec(cfg: RoundsConfig) -> EvalSetConfig:
    args: dict[str, object] = {"integrity": "strict"}
    if cfg.eval.tasks:
        args["tasks"] = ",".join(cfg.eval.tasks)
    return EvalSetConfig(name=f"{cfg.name}-eval", suites=[SuiteRun(task=f"rsr/{cfg.eval.suite}",
                                                                   args=args)],
                         epochs=cfg.eval.epochs, reducers=["mean"],
                         agent=f"rsr/{cfg.eval.harness}", agent_args=dict(cfg.eval.harness_args),
                         max_samples=cfg.eval.max_samples, max_sandboxes=cfg.eval.max_samples,
                         retry_attempts=1)


def score_logs(logs: list[Path]) -> EvalResult:
    """Passed samples over all samples; an errored sample counts as a failure."""
    passed = n = errors = 0
    for path in logs:
        log = read_eval_log(str(path))
        for sample in log.samples or []:
            n += 1
            if sample.error is not None or not sample.scores:
                errors += 1
                continue
            value = next(iter(sample.scores.values())).value
            passed += int(isinstance(value, dict) and float(value.get("passed", 0)) >= 1.0)
    return EvalResult(passed, n, errors, [str(p) for p in logs])


def evaluate(cfg: RoundsConfig, served: Served, log_dir: Path, label: str) -> EvalResult:
    generate = {"temperature": cfg.eval.temperature} if cfg.eval.temperature is not None else {}
    ok, logs = run_eval_set(eval_spec(cfg), model=served.model, model_base_url=served.base_url,
                            log_dir=log_dir, label=label, display="none", generate=generate)
    if not ok:
        raise RsrError(f"evaluation of {served.checkpoint} did not finish ({log_dir}); run the "
                       "same command again to resume")
    return score_logs(logs)
