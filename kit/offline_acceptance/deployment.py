"""Offline acceptance as deployed, the healthy wiring it is judged against, and the what-ifs.

  * `healthy(...)`: what the draft should reach: every tensor loaded, the target states it was
    trained on concatenated through `fc`, the `d2t` map used.
  * `as_deployed(..., engine, aux_capture=None, target_class=None)`: what the user's deployment
    runs: the release's load, its aux capture for the target class (on unless the deployment
    says it is off, or the release cannot capture for that class). Given `against=` a healthy
    row, the difference and its interval; below healthy beyond the prompts' noise is a finding.
  * `fault_matrix(..., release)`: the incident's what-if section, its own result: the release
    with aux capture off, on, and after the kit's own fix (`kit.load.rewrite`), each against healthy.
    Its rows never stand for the deployment.
  * `prompt_format_gap(...)`: the same prompts raw and through the target's chat template.

Every call returns rows (`OfflineRow`): a result, or the finding that says why the release
cannot run that wiring; one row that cannot run never stops the others.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from kit.checkpoint.config import TargetConfig, load_target_config
from kit.checkpoint.draft import Draft, open_draft
from kit.errors import KitError
from kit.findings import Finding, Severity
from kit.offline_acceptance.intervals import Comparison
from kit.offline_acceptance.measure import Options, default_label, evaluate
from kit.offline_acceptance.prompts import Prompt, PromptFormat
from kit.offline_acceptance.result import OfflineRow, compare
from kit.offline_acceptance.target import load_target


def healthy(target_dir: str | Path, draft: str | Path | Draft, **kw) -> OfflineRow:
    """The healthy wiring's row (label "healthy"); `kw` as `evaluate`'s."""
    return evaluate(target_dir, draft, None, label="healthy", **kw)


def as_deployed(
    target_dir: str | Path,
    draft: str | Path | Draft,
    engine: str,
    *,
    aux_capture: bool | None = None,
    target_class: str | None = None,
    against: OfflineRow | None = None,
    **kw,
) -> OfflineRow:
    """The deployment's row: `engine`'s load and capture for the target class (`aux_capture`
    False: the deployment captures nothing). Counted as `engine` counts unless `count_as` says
    otherwise; `against` (a healthy row counted the same way) adds the comparison."""
    kw.setdefault("count_as", engine)
    row = evaluate(
        target_dir, draft, engine, aux_capture=aux_capture, target_class=target_class, **kw
    )
    row.label = f"as deployed: {default_label(row.wiring)}"
    if against is not None:
        judge(row, against)
    return row


def judge(row: OfflineRow, healthy_row: OfflineRow) -> None:
    """Set `row.vs_healthy`; a wiring below healthy beyond the noise adds a finding to the row
    (a release that drafts late is judged on its steps where trained: DRAFT_POSITIONS_LATE says
    what the positions cost)."""
    if row.result is None or healthy_row.result is None:
        return
    a, b = healthy_row.result.settings, row.result.settings
    if (a.counted_as, a.temperature, a.k) != (b.counted_as, b.temperature, b.k):
        raise KitError(
            f"cannot compare {row.label!r} with healthy: counted as {b.counted_as} at k={b.k}, "
            f"temperature {b.temperature:g} against {a.counted_as}, k={a.k}, {a.temperature:g}"
        )
    c = compare(healthy_row.result, row.result, healthy_row.label, row.label)
    row.vs_healthy = c
    # what the wiring itself loses: a release that drafts late is judged with its steps where
    # trained, the positions' own cost being DRAFT_POSITIONS_LATE
    wired = row.result.trained_positions
    w = c if wired is None else compare(healthy_row.result, wired, healthy_row.label, row.label)
    if w.beyond_noise and w.difference < 0:
        row.findings.append(_below_healthy(row, c))


def _below_healthy(row: OfflineRow, c: Comparison) -> Finding:
    result = row.result
    assert result is not None and row.wiring is not None
    return Finding(
        code="OFFLINE_BELOW_HEALTHY",
        severity=Severity.ERROR,
        title=f"offline accept len {c.b:.2f} {result.accept_len_ci}"
        + (" (at best: parameters never written)" if result.undetermined else "")
        + f" is {-c.difference:.2f} below the healthy wiring's {c.a:.2f}, beyond the prompts' "
        "noise",
        evidence=(c.sentence(), *row.wiring.describe()),
        fix="the wiring differs from the draft's training: fix the load and hidden-state "
        "findings, then measure again",
        engine=None if row.wiring.healthy else str(row.wiring.release),
        data=c.to_dict(),
    )


def fault_matrix(
    target_dir: str | Path,
    draft: str | Path | Draft,
    release: str = "sglang==0.5.10",
    *,
    target_class: str | None = None,
    prompts: list[Prompt] | str | Path | None = None,
    target=None,
    target_config: TargetConfig | None = None,
    healthy_row: OfflineRow | None = None,
    **options,
) -> list[OfflineRow]:
    """Healthy, then the incident on `release` (aux capture off), capture on, and both again
    after the kit's own fix (`kit.load.rewrite.plan_fix` + `write_fixed` into a temporary folder; no
    fix rows when the release loads the draft as it is). Every row is counted as `release`
    counts, so the rows compare; each carries its comparison with healthy (`healthy_row`, when
    already measured on the same prompts with the same options, is reused)."""
    options["count_as"] = options.get("count_as") or release
    opts = Options(**options)  # every option checked before any row runs
    if target is None:
        target = load_target(target_dir, opts.device, opts.device_map)
    target_config = target_config or load_target_config(target_dir)
    common = {"prompts": prompts, "target": target, "target_config": target_config, **options}
    opened = open_draft(draft, weights=True)  # once, for every row
    reference = healthy_row or healthy(target_dir, opened, **common)
    rows = [reference]

    def add(label: str, wired: Path | Draft, aux_capture: bool) -> None:
        row = evaluate(
            target_dir,
            wired,
            release,
            aux_capture=aux_capture,
            target_class=target_class,
            label=label,
            **common,
        )
        judge(row, reference)
        rows.append(row)

    add(f"{release}, aux capture off", opened, False)
    add(f"{release}, aux capture on", opened, True)
    with fixed_draft(opened, release) as fixed:
        if isinstance(fixed, OfflineRow):
            rows.append(fixed)
        elif fixed is not None:
            path, what = fixed
            add(f"{release} after kit fix ({what}), aux capture off", path, False)
            add(f"{release} after kit fix ({what}), aux capture on", path, True)
    return rows


@contextmanager
def fixed_draft(
    draft: str | Path | Draft, release: str
) -> Iterator[tuple[Path, str] | OfflineRow | None]:
    """The draft as `kit fix --engine release` writes it, in a temporary folder for the block,
    with what the fix changed; None when the release loads the draft as it is; a FIX_REFUSED
    row when the kit cannot write a fix."""
    from kit.load.rewrite import plan_fix, write_fixed

    opened = open_draft(draft, weights=True)
    ck = opened.checkpoint
    try:
        plan = plan_fix(ck, opened.draft_config, release)
    except KitError as e:
        yield OfflineRow(f"{release} after kit fix", None, crash=_no_fix(release, e))
        return
    if not plan.changes_anything:
        yield None
        return
    what = ", ".join(["rename"] * bool(plan.renames) + ["config.json"] * bool(plan.config))
    with tempfile.TemporaryDirectory() as tmp:
        yield write_fixed(ck, plan, Path(tmp) / "fixed"), what


def as_fixed(
    target_dir: str | Path,
    draft: str | Path | Draft,
    engine: str,
    *,
    against: OfflineRow | None = None,
    **kw,
) -> OfflineRow | None:
    """The deployment's row after `kit fix --engine engine` (`kw` as `as_deployed`'s): what the
    fix buys; None when the release loads the draft as it is."""
    with fixed_draft(draft, engine) as fixed:
        if fixed is None or isinstance(fixed, OfflineRow):
            return fixed
        path, what = fixed
        row = as_deployed(target_dir, path, engine, against=against, **kw)
    row.label = row.label.replace("as deployed:", f"as deployed after kit fix ({what}):", 1)
    return row


def _no_fix(release: str, e: KitError) -> Finding:
    return Finding(
        code="FIX_REFUSED",
        severity=Severity.ERROR,
        title=f"the kit cannot write a fix for {release}: {e}",
        fix=f"see `python -m kit fix DRAFT --engine {release}` for what it would need",
        engine=release,
    )


def prompt_format_gap(
    target_dir: str | Path,
    draft: str | Path | Draft,
    *,
    raw: OfflineRow | None = None,
    **kw,
) -> Comparison | None:
    """Healthy wiring on the same prompts raw and through the target's chat template (chat
    against raw); `raw` reuses a healthy row already measured on raw prompts. None when a row
    has no figure."""
    kw.pop("prompt_format", None)
    raw = raw or healthy(target_dir, draft, prompt_format=PromptFormat.RAW, **kw)
    chat = healthy(target_dir, draft, prompt_format=PromptFormat.CHAT, **kw)
    if raw.result is None or chat.result is None:
        return None
    return compare(raw.result, chat.result, "raw prompts", "chat-template prompts")


def format_gap_finding(c: Comparison) -> Finding:
    """A deployment check's quote of the gap: a warning when chat prompts lose acceptance beyond
    the noise (the draft did not learn the template a chat endpoint sends), else information."""
    lower = c.beyond_noise and c.difference < 0
    return Finding(
        code="OFFLINE_PROMPT_FORMAT_GAP",
        severity=Severity.WARNING if lower else Severity.INFO,
        title=f"offline accept len {c.b:.2f} with the chat template, {c.a:.2f} on raw prompts"
        + (": the draft loses acceptance on chat requests" if lower else ""),
        evidence=(c.sentence(),),
        fix="train (or fine-tune) the draft on prompts rendered with the target's chat template"
        if lower
        else "",
        data=c.to_dict(),
    )
