"""The deployment check: the launch command, the configs and the tokenizers as evidence.

Most low-acceptance causes are not in a draft's keys or in the aux capture but in how the server
was launched and in what the draft and target configs disagree on. `check()` reads whatever it is
given (a launch line, a draft, a target config, tokenizers) and applies every rule the inputs
allow; the rules that need no launch line (RoPE, dtype, quantization, vocabulary, context) run on
the two configs alone.

    check(launch="vllm serve …", engine="vllm==0.11.0")  ->  DeploymentReport
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kit.acceptance.model import NEAR_ZERO_ACCEPT_LEN
from kit.checkpoint.config import DraftConfig, TargetConfig, load_draft_config, load_target_config
from kit.checkpoint.draft import Draft
from kit.checkpoint.files import Checkpoint, open_checkpoint
from kit.deployment import llamacpp
from kit.deployment.configs import Pair, config_findings
from kit.deployment.draftkind import DraftKind, Kind, draft_kind
from kit.deployment.launch import launch_text
from kit.deployment.lines import read_served
from kit.deployment.parallel import parallel_findings
from kit.deployment.quant import quant_findings
from kit.deployment.runner import runner_findings
from kit.deployment.served import Served, local_path
from kit.deployment.serving import (
    algorithm,
    any_engine_fix,
    chain,
    known_issues,
    launch_findings,
    longer_than_trained,
    loose_verification,
    trained_unroll,
)
from kit.engines import EngineRelease, parse_engine
from kit.engines.serving import Method
from kit.errors import KitError
from kit.extras import install, installed
from kit.findings import Finding, Severity, ranked

__all__ = ["DeploymentReport", "Served", "check"]

# An accept length at or below this is "near-zero acceptance" (1.00: no draft accepted).


@dataclass
class DeploymentReport:
    """The findings, what the launch line asks for, and the rules that could not run (why)."""

    findings: list[Finding]
    served: Served | None = None
    facts: dict[str, Any] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    @property
    def root_causes(self) -> list[Finding]:
        return [f for f in self.findings if f.root_cause]

    def to_dict(self) -> dict[str, Any]:
        return {
            "launch": self.served.to_dict() if self.served else None,
            "facts": self.facts,
            "skipped": self.skipped,
            "findings": [f.to_dict() for f in ranked(self.findings)],
        }


def check(
    launch: str | Path | Served | None = None,
    *,
    draft: str | Path | Draft | None = None,
    target_config: str | Path | TargetConfig | None = None,
    engine: str | None = None,
    train_tokenizer: str | Path | None = None,
    served_tokenizer: str | Path | None = None,
    accept_len: float | None = None,
    chain: tuple[int, str] | None = None,
) -> DeploymentReport:
    """Every deployment rule the inputs allow. `engine` is `ENGINE==X` (or a bare engine name
    with a launch line: the release is then assumed, and said so); draft and target paths named
    in the launch line are used when they exist here. `accept_len` (observed, e.g. from the
    server log) makes a quantized target a root cause when acceptance is near zero. `chain`,
    drafts per step and where they were read (the logs), is checked against the draft's
    training unroll when no launch line says it. A draft (`kit.checkpoint.Draft`) or target
    config already opened is taken as it is, not read again."""
    llama = _llama_server(launch)
    if llama is not None or launch is None or isinstance(launch, Served):
        served = None if llama is not None else launch
    else:
        served = read_served(launch, engine)
    release = served.release if served else _release(engine)
    draft_cfg, draft_dir = _draft(draft, served)
    target_cfg, target_dir = _target(target_config, served)
    report = DeploymentReport([], served, _facts(draft_dir, target_dir, release))
    if served:
        report.findings += launch_findings(served)
    if draft_cfg and target_cfg:
        report.findings += config_findings(Pair(draft_cfg, target_cfg, release, served))
    else:
        report.skipped["configs"] = "needs a draft config and a target config (given, or local "
        report.skipped["configs"] += "paths in the launch line)"
    weights = draft.checkpoint if isinstance(draft, Draft) and draft.checkpoint else draft_dir
    if served and served.release.name in ("sglang", "vllm"):
        report.findings += _serving_findings(served, draft_cfg, target_cfg, draft_dir)
    elif llama is not None:
        report.facts["launch"] = "llama-server"
        report.findings += llamacpp.findings(llama)
    elif not served:
        report.skipped["launch"] = "no launch line given"
        report.findings += _chain_without_launch(chain, draft_cfg, release)
    # a Draft opened without its weights (doctor's --draft-config) has no header to read here
    header = draft.checkpoint if isinstance(draft, Draft) else weights
    ck = _header(header) if served and served.method is Method.EAGLE3 else None
    report.findings += quant_findings(served, draft_cfg, target_cfg, ck, release)
    report.findings += _tokenizer_findings(
        served, draft_cfg, weights, target_dir, train_tokenizer, served_tokenizer, report
    )
    report.findings = _with_acceptance(report.findings, accept_len)
    return report


def _llama_server(launch: str | Path | Served | None) -> llamacpp.LlamaServer | None:
    """llama.cpp's server line, read by its own few rules (no release table: builds)."""
    if launch is None or isinstance(launch, Served):
        return None
    return llamacpp.read(launch_text(launch)[1])


def _draft(
    draft: str | Path | Draft | None, served: Served | None
) -> tuple[DraftConfig | None, Path | None]:
    """The draft's config and folder: the value opened, the path given, or the launch line's."""
    if isinstance(draft, Draft):
        return draft.draft_config, draft.path
    folder = Path(draft) if draft else _local_model(served.draft if served else None)
    return (load_draft_config(folder) if folder else None), folder


def _target(
    target: str | Path | TargetConfig | None, served: Served | None
) -> tuple[TargetConfig | None, Path | None]:
    if isinstance(target, TargetConfig):
        path = target.path
        return target, path.parent if path and path.name == "config.json" else path
    folder = Path(target) if target else None
    if folder is None and served:
        folder = _local_model(served.target)
    return (load_target_config(folder) if folder else None), folder


def _release(engine: str | None) -> EngineRelease | None:
    """The release `engine` names; None for none or a bare engine name (a launch line's release
    is then assumed). Any other spelling is refused by `parse_engine`, with a did-you-mean."""
    from kit.engines import ENGINES

    if not engine or engine.strip().lower() in ENGINES:
        return None
    return parse_engine(engine)


def _local_model(value: str | None) -> Path | None:
    path = local_path(value)
    return path if path and (path.is_file() or (path / "config.json").is_file()) else None


def _facts(
    draft: Path | None, target: Path | None, release: EngineRelease | None
) -> dict[str, Any]:
    return {
        "engine": str(release) if release else None,
        "draft": str(draft) if draft else None,
        "target_config": str(target) if target else None,
    }


def _serving_findings(
    served: Served, draft: DraftConfig | None, target: TargetConfig | None, draft_dir: Path | None
) -> list[Finding]:
    kind = draft_kind(draft, draft_dir) if draft else Kind(DraftKind.UNKNOWN, "no draft config")
    multimodal = bool(target and (target.text_config_key or "vision_config" in target.raw))
    out = [*algorithm(served, kind), *chain(served, draft), *parallel_findings(served, target)]
    if served.engine == "vllm":
        out += runner_findings(served, draft, target)  # and whether V2 runs: a known issue's fact
    out += [*known_issues(served, multimodal), *loose_verification(served)]
    if draft and target and kind.kind is DraftKind.EAGLE3 and served.method is Method.EAGLE3:
        from kit.tracing.capture import (
            simulate_capture,  # can this release capture for this target?
        )

        out += simulate_capture(target, draft, served.release).findings
    return out


def _chain_without_launch(
    chain: tuple[int, str] | None, draft: DraftConfig | None, release: EngineRelease | None
) -> list[Finding]:
    """The chain the logs show against the draft's training unroll (a launch line's chain is
    judged with its own flags, `kit.deployment.serving.chain`)."""
    trained = trained_unroll(draft)
    if chain is None or not trained or chain[0] <= trained:
        return []
    fix = any_engine_fix(trained)
    return [
        longer_than_trained(trained, chain[0], chain[1], fix, str(release) if release else None)
    ]


def _header(weights: Path | Checkpoint | None) -> Checkpoint | None:
    """The draft checkpoint's header (tensor names and shapes), when there is one to read."""
    if isinstance(weights, Checkpoint) or weights is None:
        return weights
    try:
        return open_checkpoint(weights)
    except KitError:
        return None  # a config-only folder: the rules that need tensors say nothing


def _tokenizer_findings(
    served: Served | None,
    draft: DraftConfig | None,
    weights: Path | Checkpoint | None,
    target_dir: Path | None,
    train: str | Path | None,
    served_tok: str | Path | None,
    report: DeploymentReport,
) -> list[Finding]:
    """The chat-template rule (with a trainer tokenizer) and the unreachable-tokens rule (with a
    draft whose smaller vocabulary has a d2t); a tokenizer is loaded only when one of them runs."""
    from kit.checkpoint.tokenizer import has_tokenizer
    from kit.deployment.tokens import load_template, template_findings, unreachable_findings

    reduced = bool(draft and draft.draft_vocab_size and draft.draft_vocab_size < draft.vocab_size)
    from kit.checkpoint.hub import is_remote

    has_d2t = reduced and (  # safetensors only: a pickle is never unpickled for this
        (isinstance(weights, Checkpoint) and weights.kind != "pickle")
        or (
            isinstance(weights, Path) and (any(weights.glob("*.safetensors")) or is_remote(weights))
        )
    )
    if train is None:
        report.skipped["chat template"] = "no --train-tokenizer given"
    if train is None and not has_d2t:
        return []
    if train is None and not installed("transformers"):
        # not asked for by name: the core install checks the rest and says what it left out
        report.skipped["unreachable tokens"] = (
            f"reading the served tokenizer needs transformers: {install('offline')}"
        )
        return []
    folder = _served_tokenizer(served, target_dir, served_tok)
    if folder is None:
        report.skipped["tokenizer"] = "no served tokenizer (give --tokenizer or a local target)"
        return []
    served_t = load_template(folder, served.chat_template if served else None)
    report.facts["served_tokenizer"] = served_t.source
    out = []
    if train is not None:
        if not has_tokenizer(Path(train)):
            raise KitError("no tokenizer files (tokenizer.json, tokenizer_config.json)", train)
        out += template_findings(load_template(Path(train)), served_t)
    if has_d2t and draft and weights is not None:
        ck = weights if isinstance(weights, Checkpoint) else open_checkpoint(weights)
        out += unreachable_findings(served_t, draft, ck)
    return out


def _served_tokenizer(
    served: Served | None, target_dir: Path | None, given: str | Path | None
) -> Path | None:
    from kit.checkpoint.tokenizer import has_tokenizer

    candidates = [Path(given)] if given else []
    if served:
        candidates += [p for p in (local_path(served.tokenizer), local_path(served.target)) if p]
    if target_dir:
        candidates.append(target_dir if target_dir.is_dir() else target_dir.parent)
    return next((c for c in candidates if has_tokenizer(c)), None)


def _with_acceptance(findings: list[Finding], accept_len: float | None) -> list[Finding]:
    """A quantized target is a root cause only when acceptance is near zero and nothing else
    found here explains it."""
    if accept_len is None or accept_len > NEAR_ZERO_ACCEPT_LEN:
        return findings
    if any(f.root_cause for f in findings):
        return findings
    return [
        replace(
            f,
            severity=Severity.ERROR,
            root_cause=True,
            evidence=(*f.evidence, f"observed accept length {accept_len:.2f}: near zero"),
        )
        if f.code == "QUANTIZED_TARGET"
        else f
        for f in findings
    ]
