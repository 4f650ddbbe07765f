"""`doctor`: every check of the notebooks in one call, without Jupyter, findings ranked.

The same library calls the notebooks make (inspection, load replay, aux-capture trace, log analysis,
offline acceptance), run on whatever inputs are given; a check whose input is absent is listed as
skipped with the reason, so a verdict never hides what it did not look at.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kit.findings import Finding, ranked

WEIGHT_PATTERNS = ("*.safetensors", "*.bin", "*.pt", "*.pth")


@dataclass
class Diagnosis:
    """The findings of every check that ran, root causes first, and the checks that did not."""

    engine: str
    checks: dict[str, list[Finding]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # check -> why
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def findings(self) -> list[Finding]:
        seen: dict[tuple[str, str], Finding] = {}
        for found in self.checks.values():
            for f in found:
                seen.setdefault((f.code, f.title), f)
        return ranked(seen.values())

    @property
    def root_causes(self) -> list[Finding]:
        return [f for f in self.findings if f.root_cause]

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.engine,
            "checks_run": list(self.checks),
            "checks_skipped": self.skipped,
            "facts": self.facts,
            "findings": [f.to_dict() for f in self.findings],
        }


def has_weights(path: Path) -> bool:
    """A file, or a folder holding tensors (a folder with only config.json is a config)."""
    return path.is_file() or any(any(path.glob(p)) for p in WEIGHT_PATTERNS)


def diagnose(
    draft: str | Path,
    *,
    target_config: str | Path | None = None,
    draft_config: str | Path | None = None,
    engine: str = "sglang==0.5.10",
    logs: Sequence[str | Path] = (),
    target_class: str | None = None,
    aux_capture: bool | None = None,
    num_draft_tokens: int | None = None,
    expected_accept_len: float | None = None,
    target: str | Path | None = None,
    num_prompts: int | None = None,
) -> Diagnosis:
    """Run every check the inputs allow. `draft_config` (default: the draft's) is what is traced;
    a transformers `target` adds offline acceptance, whose healthy figure becomes the expected
    accept length the logs are judged against (unless `expected_accept_len` is given)."""
    from kit.config import load_draft_config, load_target_config
    from kit.engines import parse_engine

    release = parse_engine(engine)
    report = Diagnosis(str(release))
    draft = Path(draft)
    if has_weights(draft):
        from kit.checkpoint import open_checkpoint
        from kit.inspection import inspect_checkpoint
        from kit.loading import simulate_load

        inspection = inspect_checkpoint(draft)
        report.checks["inspection"] = list(inspection.findings)
        report.facts["format"] = inspection.format.name
        load = simulate_load(open_checkpoint(draft), load_draft_config(draft), release)
        report.checks["load"] = list(load.findings)
        report.facts["keys dropped silently"] = len(load.with_outcome("dropped_silently"))
    else:
        why = "the draft path holds a config but no weights"
        report.skipped["inspection"] = report.skipped["load"] = why

    if target_config is not None:
        from kit.capture import simulate_capture
        from kit.inspection import check_pair

        target_cfg = load_target_config(target_config)
        traced_cfg = load_draft_config(draft_config or draft)
        capture = simulate_capture(
            target_cfg, traced_cfg, release, target_class=target_class, aux_capture=aux_capture
        )
        report.checks["capture"] = list(capture.findings) + check_pair(target_cfg, traced_cfg)
        report.facts.update(hidden_width=capture.hidden_width, fc_applied=capture.fc_applied)
    else:
        report.skipped["capture"] = "no target config given"

    if target is not None and has_weights(draft):
        k = num_draft_tokens - 1 if num_draft_tokens and num_draft_tokens > 1 else None
        findings, facts = offline(draft, target, release, aux_capture, num_prompts, target_class, k)
        report.checks["offline"] = findings
        report.facts.update(facts)
        if expected_accept_len is None:
            expected_accept_len = facts.get("offline_accept_len_healthy")
    else:
        report.skipped["offline"] = "needs a draft checkpoint and --target"

    if logs:
        from kit.acceptance import analyze, parse_files

        runs = parse_files(
            [Path(p) for p in logs], engine=engine, num_draft_tokens=num_draft_tokens
        )
        report.checks["acceptance"] = list(
            analyze(runs, expected_accept_len=expected_accept_len).findings
        )
        if ci := report.facts.get("offline_accept_len_healthy_ci"):
            report.facts["logs_against_offline_healthy_ci"] = {
                r.source: _against(r.accept_len.mean, ci) for r in runs
            }
    else:
        report.skipped["acceptance"] = "no server log given"
    return report


def _against(logged: float | None, ci: list[float]) -> str:
    """Where a log's mean accept len falls against the offline interval."""
    if logged is None:
        return "no accept len in the log"
    where = "below" if logged < ci[0] else "above" if logged > ci[1] else "within"
    return f"{logged:.3f} is {where} [{ci[0]:.3f}, {ci[1]:.3f}]"


def offline(
    draft: Path,
    target: str | Path,
    release: Any,
    aux_capture: bool | None,
    num_prompts: int | None = None,
    target_class: str | None = None,
    k: int | None = None,
) -> tuple[list[Finding], dict[str, Any]]:
    """Offline acceptance as the deployment runs it (the release's load, its capture for the
    target class unless `aux_capture` is False), judged against the healthy wiring, and the gap
    between raw and chat-template prompts when the target's tokenizer has a template.

    Both rows count as the release counts, at the deployment's chain length `k` (default 5).
    The deployment's findings are its row's (a wiring the release cannot run is its crash
    finding); the facts carry each figure with its interval.
    """
    from kit.organism import as_deployed, format_gap_finding, healthy, prompt_format_gap
    from kit.organism.prompts import default_prompts_file, load_prompts
    from kit.organism.target import load_target

    target = Path(target)
    prompts = None
    if num_prompts:
        prompts = load_prompts(default_prompts_file(target))[:num_prompts]
    common = {"prompts": prompts, "progress": False, "count_as": str(release), "k": k or 5}
    common["target"] = load_target(target)
    ref = healthy(target, draft, **common)
    deployed = as_deployed(
        target,
        draft,
        str(release),
        aux_capture=aux_capture,
        target_class=target_class,
        against=ref,
        **common,
    )
    findings = list(deployed.findings)
    facts: dict[str, Any] = {}
    for name, row in (("healthy", ref), ("as_deployed", deployed)):
        if row.result is not None:
            facts[f"offline_accept_len_{name}"] = round(row.result.accept_len, 4)
            facts[f"offline_accept_len_{name}_ci"] = row.result.accept_len_ci.to_list()
        else:
            facts[f"offline_{name}"] = f"does not run: {row.crash.title if row.crash else '?'}"
    if _has_chat_template(target) and (gap := prompt_format_gap(target, draft, raw=ref, **common)):
        findings.append(format_gap_finding(gap))
        facts["offline_accept_len_chat_template"] = round(gap.b, 4)
    return findings, facts


def _has_chat_template(target: Path) -> bool:
    """The template a chat endpoint renders requests with: in tokenizer_config.json or beside it."""
    import json

    if (target / "chat_template.jinja").is_file():
        return True
    config = target / "tokenizer_config.json"
    try:
        return bool(config.is_file() and json.loads(config.read_text()).get("chat_template"))
    except (OSError, ValueError):
        return False
