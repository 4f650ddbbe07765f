"""What every engine backend shares: the kit's rows beside the engine's, and the finding that
says whether they agree.

A backend (vLLM in process, SGLang as a server) only starts its engine and counts the kit's
prompts in it; the rows around that measurement (healthy, as deployed, after `kit fix`), the
prompts as sent and the judgement are the same for every engine, so they live here once.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kit.checkpoint.config import load_target_config
from kit.checkpoint.draft import open_draft
from kit.findings import Finding, Severity
from kit.offline_acceptance.measure import Options
from kit.offline_acceptance.prompts import Prompt, PromptFormat, chat_prompts, resolve_prompts
from kit.offline_acceptance.result import OfflineRow, compare

CPU_SAMPLING_UNRELIABLE = "ENGINE_CPU_SAMPLING_UNRELIABLE"


class EngineCrash(Exception):
    """The engine did not start with this draft: its exception's kind and first line."""

    def __init__(self, kind: str, message: str) -> None:
        self.kind, self.message = kind, message
        super().__init__(f"{kind}: {message}")

    @classmethod
    def of(cls, error: BaseException) -> EngineCrash:
        """The crash an exception raised in this process is."""
        text = str(error).strip()
        return cls(type(error).__name__, text.splitlines()[0] if text else "")


def sent_prompts(target_dir: Path, prompts, opts: Options) -> tuple[list[Prompt], int]:
    """The prompts as the kit sends them (chat-rendered when asked) and the key its rows use."""
    cfg = load_target_config(target_dir)
    given = resolve_prompts(prompts, target_dir, cfg.vocab_size)
    key = hash(tuple(tuple(p.ids) for p in given))
    if opts.prompt_format == PromptFormat.CHAT:
        return chat_prompts(given, target_dir, cfg.vocab_size), key
    return given, key


def crash_finding(release: str, e: EngineCrash) -> Finding:
    """The row of an engine that refused the draft: its own exception, and where to look."""
    return Finding(
        code="STARTUP_CRASH",
        severity=Severity.CRITICAL,
        title=f"{release} does not start with this draft: {e.kind}",
        evidence=(f"{e.kind}: {e.message}",),
        fix="see the kit's load findings for this release (python -m kit doctor DRAFT --engine "
        f"{release})",
        engine=release,
    )


def engine_against_kit(predicted: OfflineRow, measured: OfflineRow) -> Finding:
    """Whether the engine's figure and the kit's prediction for it agree: within the paired
    interval of their difference, or both refusing to start."""
    release = measured.label.removeprefix("measured in ")
    p, m = predicted.result, measured.result
    if p is None or m is None:
        same = p is None and m is None
        said = (predicted.crash.title if predicted.crash else "?") if p is None else "runs"
        got = (measured.crash.evidence[0] if measured.crash else "?") if m is None else "runs"
        return _agreement(same, release, f"the kit predicts: {said}", f"{release}: {got}", {})
    c = compare(p, m, predicted.label, measured.label)
    data = {
        "predicted": p.figures(),
        "measured": m.figures(),
        "comparison": c.to_dict(),
    }
    return _agreement(
        not c.beyond_noise,
        release,
        f"the kit predicts accept len {p.accept_len:.3f} {p.accept_len_ci}",
        f"{release} counted {m.accept_len:.3f} {m.accept_len_ci} ({m.verify_steps} drafts, "
        f"{m.accepted} of {m.drafted} drafted tokens accepted)",
        data,
        c.sentence(),
    )


def _agreement(same: bool, release: str, kit: str, engine: str, data: dict, *more: str) -> Finding:
    if same:
        return Finding(
            code="OFFLINE_ENGINE_AGREES",
            severity=Severity.INFO,
            title=f"{release} measures what the kit predicts for it",
            evidence=(kit, engine, *more),
            engine=release,
            data=data,
        )
    return Finding(
        code="OFFLINE_ENGINE_DIFFERS",
        severity=Severity.ERROR,
        title=f"{release} and the kit's prediction for it differ beyond the prompts' noise",
        evidence=(kit, engine, *more),
        fix="the engine is the ground truth: report the draft and this output, so the kit's "
        "rule for the release can be corrected",
        engine=release,
        data=data,
    )


def engine_rows(
    target_dir: str | Path,
    draft_dir: str | Path,
    release: str,
    measure_row: Callable[[OfflineRow, Any, dict[str, Any]], OfflineRow],
    *,
    aux_capture: bool | None,
    target_class: str | None,
    options: dict[str, Any],
) -> list[OfflineRow]:
    """The rows every engine backend gives: healthy (the kit), as `release` deploys the draft
    (the kit's prediction), the same after `kit fix` when the fix changes anything, and what the
    engine measures (`measure_row(predicted, prompts, options)`), judged against healthy with
    the engine-against-kit finding first. A figure the engine cannot give on this host
    (`CPU_SAMPLING_UNRELIABLE`: noise, or greedy whatever the temperature) is neither judged
    nor held against the kit."""
    from kit.offline_acceptance.deployment import as_deployed, as_fixed, healthy, judge
    from kit.offline_acceptance.target import load_target

    options["count_as"] = options.get("count_as") or release
    prompts, target = options.pop("prompts", None), options.pop("target", None)
    opts = Options(**options)  # every option checked before the target loads
    if target is None:
        target = load_target(target_dir, opts.device, opts.device_map)
    common = {"prompts": prompts, "target": target, **options}
    common["target_config"] = load_target_config(target_dir)  # read once, for the kit's rows
    opened = open_draft(draft_dir, weights=True)  # once, for the kit's rows
    reference = healthy(target_dir, opened, **common)
    predicted = as_deployed(
        target_dir, opened, release, aux_capture=aux_capture, target_class=target_class,
        against=reference, **common,
    )  # fmt: skip
    fixed = as_fixed(
        target_dir, opened, release, aux_capture=aux_capture, target_class=target_class,
        against=reference, **common,
    )  # fmt: skip
    kit_rows = [reference, predicted] + ([fixed] if fixed is not None else [])
    measured = measure_row(predicted, prompts, options)
    unreliable = next((f for f in measured.findings if f.code == CPU_SAMPLING_UNRELIABLE), None)
    if unreliable is not None:
        measured.findings.remove(unreliable)
        measured.findings.insert(0, unreliable)
        return [*kit_rows, measured]
    judge(measured, reference)
    measured.findings.insert(0, engine_against_kit(predicted, measured))
    return [*kit_rows, measured]
