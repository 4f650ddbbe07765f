"""Failure signatures in one run's figures. Every check returns a `Finding` or None.

Zero acceptance (nearly every window at accept len 1.00) and near-zero acceptance (a few drafts in
a hundred accepted, whatever the release and chain length) are the symptom a broken draft shows:
both are ranked critical. A healthy run gives no finding at error level or above.
"""

from __future__ import annotations

from pathlib import Path

from kit.acceptance.meaning import bands, draft_share, interpret
from kit.acceptance.model import Kind, LogRun
from kit.findings import Finding, Severity

ZERO_SHARE = 0.9  # zero acceptance: at least this share of windows accepted no draft
NEAR_ZERO_SHARE = 0.05  # near-zero acceptance: fewer than one drafted token in twenty accepted
LOW_FIRST_FACTOR = 0.5  # position-0 acceptance below half the offline step-0 accuracy
DECAY_FACTOR = 0.7  # last quarter keeps less than 70 % of the first quarter's accepted drafts
CLIFF_RATIO = 0.3  # next position keeps less than 30 % of this position's acceptance
NO_SPEEDUP_RATIO = 1.05
BELOW_EXPECTED_FACTOR = 0.8
MIN_DECAY_WINDOWS = 8
FIX_DRAFT = (
    "The draft is not running as trained. Check which checkpoint keys the engine loads or "
    "silently drops (`python -m kit simulate`) and the hidden-state width that reaches the draft "
    "and whether fc runs (`python -m kit trace`)."
)


def _name(run: LogRun) -> str:
    return Path(run.source).name


def _accept_len_range(run: LogRun) -> list[str]:
    if not run.accept_len.count:
        return []
    s = run.accept_len
    return [f"accept len {s.min:.2f}–{s.max:.2f} over {s.count} windows, mean {s.mean:.3f}"]


def zero_acceptance(run: LogRun) -> Finding | None:
    """CRITICAL when (nearly) every window accepted no draft: accept len 1.00 as printed, or
    zero accepted tokens."""
    spec, floor = run.spec_windows, run.floor_windows
    if not spec or floor < ZERO_SHARE * spec:
        return None
    meaning = interpret(run)
    rates = sorted(  # as the log prints them (a request's meta rate has its own formula)
        {w.accept_rate for w in run.windows
         if w.at_floor and w.accept_rate is not None and w.kind != Kind.META_INFO}
    )  # fmt: skip
    evidence = [f"{floor}/{spec} windows with no accepted draft", *_accept_len_range(run)]
    if "implied_accepted_drafts_per_step" in meaning:
        drafts = meaning["implied_accepted_drafts_per_step"]
        evidence.append(f"implied accepted drafts per step: {drafts:.2f}")
    if rates:
        evidence.append(f"logged accept rate {', '.join(f'{r:.2f}' for r in rates[:8])}")
    if meaning.get("zero_acceptance_rate") is not None:
        evidence.append(
            f"under {meaning['rate_formula']} zero acceptance prints "
            f"{meaning['zero_acceptance_rate']:.2f} ({meaning['rate_meaning']})"
        )
    if "floor" in run.example_lines:
        evidence.append(run.example_lines["floor"])
    return Finding(
        code="ZERO_ACCEPTANCE",
        severity=Severity.CRITICAL,
        title=f"{_name(run)}: no drafted token is accepted; every verify step keeps only the "
        "target's own token",
        evidence=tuple(evidence),
        fix=FIX_DRAFT,
        engine=run.engine,
        source=(run.formula.source if run.formula is not None else None),
        data={"run": run.source, "windows_at_floor": floor, "windows": spec},
    )


def near_zero_acceptance(run: LogRun) -> Finding | None:
    """CRITICAL when a few drafts in a hundred are accepted (but not every window is at the
    floor): a draft that is broken, not merely weak, for any release and chain length."""
    found = draft_share(run)
    if found is None or zero_acceptance(run) is not None:
        return None
    share, how = found
    if share >= NEAR_ZERO_SHARE:
        return None
    evidence = [
        f"{share:.1%} of drafted tokens accepted ({how})",
        *_accept_len_range(run),
        f"{run.floor_windows}/{run.spec_windows} windows accepted no draft at all",
    ]
    if "first" in run.example_lines:
        evidence.append(run.example_lines["first"])
    return Finding(
        code="NEAR_ZERO_ACCEPTANCE",
        severity=Severity.CRITICAL,
        title=f"{_name(run)}: near-zero acceptance: {share:.1%} of drafted tokens are accepted",
        evidence=tuple(evidence),
        fix=FIX_DRAFT,
        engine=run.engine,
        source=(run.formula.source if run.formula is not None else None),
        data={"run": run.source, "draft_share": round(share, 5)},
    )


def low_first_position(run: LogRun, expected_step0: float) -> Finding | None:
    """Position-0 acceptance far below the offline step-0 accuracy."""
    if run.per_position:
        pos0, how = run.per_position[0], "measured position-0 acceptance"
    elif run.accept_len.mean is not None:
        pos0 = min(1.0, run.accept_len.mean - 1)
        how = "upper bound accept len − 1 (every step that accepts a draft accepts position 0)"
    else:
        return None
    if pos0 >= LOW_FIRST_FACTOR * expected_step0:
        return None
    return Finding(
        code="LOW_FIRST_POSITION",
        severity=Severity.ERROR,
        title=f"{_name(run)}: position-0 acceptance {pos0:.1%} is far below the expected step-0 "
        f"accuracy {expected_step0:.1%}",
        evidence=(f"{how}: {pos0:.4f}", f"expected step-0 accuracy: {expected_step0:.4f}"),
        fix="The served draft does not behave like the one validated offline: compare the "
        "engine's weight loading and hidden-state wiring with the training setup.",
        engine=run.engine,
        data={"run": run.source, "position0": pos0, "expected_step0": expected_step0},
    )


def acceptance_decay(run: LogRun) -> Finding | None:
    """Accepted drafts per step falling over the run (last quarter vs first quarter)."""
    series = [w.accept_len for w in run.windows if w.accept_len is not None]
    if len(series) < MIN_DECAY_WINDOWS:
        return None
    q = len(series) // 4
    first, last = sum(series[:q]) / q, sum(series[-q:]) / q
    if first - 1 <= 0 or (last - 1) >= DECAY_FACTOR * (first - 1) or first - last < 0.1:
        return None
    return Finding(
        code="ACCEPTANCE_DECAY",
        severity=Severity.WARNING,
        title=f"{_name(run)}: acceptance decays over the run: accept len {first:.2f} → {last:.2f}",
        evidence=(
            f"mean accept len, first quarter of {len(series)} windows: {first:.2f}",
            f"mean accept len, last quarter: {last:.2f}",
        ),
        fix="Look at what changed over the run: longer contexts than the draft was trained on, "
        "a different request mix, or memory pressure (retracted requests).",
        engine=run.engine,
        data={"run": run.source, "first": first, "last": last},
    )


def position_cliff(run: LogRun) -> Finding | None:
    """Per-position acceptance that collapses from one position to the next (far steeper than
    the geometric fall-off of a draft that is just less sure further out)."""
    pp = run.per_position
    for i in range(len(pp) - 1):
        if pp[i] >= 0.1 and pp[i + 1] < CLIFF_RATIO * pp[i]:
            return Finding(
                code="ACCEPTANCE_DECAY",
                severity=Severity.WARNING,
                title=f"{_name(run)}: acceptance collapses after draft position {i}: "
                f"{pp[i]:.1%} → {pp[i + 1]:.1%}",
                evidence=(f"per-position acceptance: {', '.join(f'{p:.3f}' for p in pp)}",),
                fix=f"Positions beyond {i} add draft cost for little gain: serve with {i + 1} "
                "speculative tokens, or check that the draft was trained for as many steps as it "
                "is asked to draft.",
                engine=run.engine,
                data={"run": run.source, "position": i},
            )
    return None


FULL_DRAFT_RATIO = 0.5  # llama.cpp: a ratio below this, with ...
FULL_DRAFT_TOKENS = 3.0  # ... at least this many tokens drafted a round ...
FULL_DRAFT_ACCEPTED = 0.5  # ... and at least this many accepted a round: long drafts, good draft


def full_drafts(run: LogRun) -> Finding | None:
    """llama.cpp's ratio of accepted to generated draft tokens, low only because every round
    drafts its full n_max: with `--spec-draft-p-min` 0.0 (the default since build b9235) the
    drafter never stops on an unsure token. The tokens accepted a round are the figure to judge
    the draft by."""
    if run.engine_name != "llama.cpp" or not run.drafted or run.accept_len.mean is None:
        return None
    ratio, per_round = run.accepted / run.drafted, run.accept_len.mean - 1
    if ratio <= 0 or ratio >= FULL_DRAFT_RATIO or per_round < FULL_DRAFT_ACCEPTED:
        return None
    drafted = per_round / ratio
    if drafted < FULL_DRAFT_TOKENS:
        return None
    return Finding(
        code="LOW_RATIO_FROM_FULL_DRAFTS",
        severity=Severity.WARNING,
        title=f"{_name(run)}: acceptance ratio {ratio:.2f}, but {per_round:.2f} drafts are "
        f"accepted a round: every round drafts about {drafted:.1f} tokens, past the first miss",
        evidence=(
            f"{run.accepted} accepted of {run.drafted} drafted: ratio {ratio:.3f}",
            f"mean accept length {run.accept_len.mean:.2f}: {per_round:.2f} accepted a round, "
            f"{drafted:.1f} drafted a round",
            "--spec-draft-p-min 0.0 (the default since b9235) never stops a draft early; "
            "measured on one pair: ratio 0.94 with 0.75, 0.30 with 0.0",
        ),
        fix="judge the draft by accept length; --spec-draft-p-min 0.75 (or a lower "
        "--spec-draft-n-max) stops unsure drafts and saves their verify cost",
        engine=run.engine,
        source="ggml-org/llama.cpp issues #25792 (b9235, PR #23269), #25908, #23544",
        data={"run": run.source, "ratio": ratio, "drafted_per_round": drafted},
    )


BATCH_GROUP = 5  # iterations at least in the smallest and in the largest batches
BATCH_FALL = 0.7  # accepted drafts per step at large batches below this share of small ones


def falls_with_batch(run: LogRun) -> Finding | None:
    """TensorRT-LLM's one-model EAGLE-3 accepted fewer drafts the more requests an iteration
    batched: its iteration statistics name the batch, so the smallest and largest batches'
    accept lengths are compared."""
    if run.engine_name != "tensorrt_llm":
        return None
    ws = sorted((w for w in run.windows if w.running and w.accept_len is not None),
                key=lambda w: w.running)  # fmt: skip
    q = len(ws) // 4
    if q < BATCH_GROUP or ws[q - 1].running >= ws[-q].running:
        return None
    small, large = ws[:q], ws[-q:]
    a_small = sum(w.accept_len for w in small) / q
    a_large = sum(w.accept_len for w in large) / q
    if a_small - 1 <= 0 or a_large - 1 >= BATCH_FALL * (a_small - 1):
        return None
    return Finding(
        code="ACCEPT_LEN_FALLS_WITH_BATCH",
        severity=Severity.WARNING,
        title=f"{_name(run)}: accept length {a_small:.2f} at batches up to "
        f"{small[-1].running}, {a_large:.2f} at batches from {large[0].running}",
        evidence=(
            f"{q} iterations with the fewest drafting requests ({small[0].running}-"
            f"{small[-1].running}): mean accept length {a_small:.3f}",
            f"{q} with the most ({large[0].running}-{large[-1].running}): {a_large:.3f}",
            "a draft accepts the same tokens whatever the batch; a fall with the batch is the "
            "engine's",
        ),
        fix="compare at batch 1; TensorRT-LLM fixed this in one-model mode with PR #10654 "
        "(release/1.2): upgrade, or cap max_batch_size until then",
        engine=run.engine,
        source="NVIDIA/TensorRT-LLM issue #9208, PR #10654",
        data={"run": run.source, "small": a_small, "large": a_large},
    )


def kv_scale_defaulted(run: LogRun) -> Finding | None:
    """vLLM's warning that an FP8 KV cache runs with scale 1.0: a checkpoint without k/v
    scales. The draft's KV cache follows --kv-cache-dtype unless set apart, and a draft saved in
    bf16 has no scales."""
    line = run.facts.get("kv_scale_defaulted")
    if line is None:
        return None
    return Finding(
        code="KV_CACHE_SCALE_DEFAULTED",
        severity=Severity.WARNING,
        title=f"{_name(run)}: an FP8 KV cache runs with scale 1.0 (no k/v scales in a "
        "checkpoint): if it is the draft's, its attention is off",
        evidence=(
            line,
            "the draft's KV cache follows --kv-cache-dtype unless set apart (vLLM from 0.28.0: "
            '"kv_cache_dtype" in --speculative-config); a bf16 draft checkpoint has no scales',
            "measured: accept length 2.6-2.8 with a bf16 draft cache, 1.79 with the target's FP8",
        ),
        fix='serve the draft\'s KV cache in bf16 ("kv_cache_dtype": "auto" in '
        "--speculative-config from vllm 0.28.0), or calibrate k/v scales into the draft",
        engine=run.engine,
        source="vllm 0.33.0 model_executor/layers/quantization/kv_cache.py:164-169; "
        "lightseekorg/tokenspeed PR #1012; vllm PR #24505",
        data={"run": run.source},
    )


def no_speedup(run: LogRun, baseline: LogRun) -> Finding | None:
    """Throughput with speculation not above the baseline run's."""
    if not run.throughput.count or not baseline.throughput.count:
        return None
    ratio = run.throughput.mean / baseline.throughput.mean
    if ratio >= NO_SPEEDUP_RATIO:
        return None
    return Finding(
        code="NO_SPEEDUP",
        severity=Severity.ERROR,
        title=f"{_name(run)}: no speedup: {run.throughput.mean:.1f} tok/s against "
        f"{baseline.throughput.mean:.1f} tok/s without speculation (×{ratio:.2f})",
        evidence=(
            f"{run.source}: mean gen throughput {run.throughput.mean:.2f} tok/s",
            f"{baseline.source} (baseline): {baseline.throughput.mean:.2f} tok/s",
        ),
        fix="Speculation costs draft and verify work; with acceptance this low it cannot pay off.",
        engine=run.engine,
        data={"run": run.source, "baseline": baseline.source, "ratio": ratio},
    )


def below_expected(run: LogRun, expected_accept_len: float) -> Finding | None:
    mean = run.accept_len.mean
    if mean is None or mean >= BELOW_EXPECTED_FACTOR * expected_accept_len:
        return None
    return Finding(
        code="BELOW_EXPECTED_ACCEPT_LEN",
        severity=Severity.WARNING,
        title=f"{_name(run)}: accept len {mean:.2f} is below the expected "
        f"{expected_accept_len:.2f}",
        evidence=(f"{run.source}: mean accept len {mean:.4f}",),
        fix="Compare the served draft's wiring with the offline measurement.",
        engine=run.engine,
        data={"run": run.source},
    )


def above_chain_cap(run: LogRun) -> Finding | None:
    cap = bands(run)["chain_cap"]
    if not cap or not run.accept_len.count or run.accept_len.max <= cap + 0.01:
        return None
    return Finding(
        code="ACCEPT_LEN_ABOVE_CHAIN_CAP",
        severity=Severity.ERROR,
        title=f"{_name(run)}: accept len {run.accept_len.max:.2f} exceeds the chain cap {cap}",
        evidence=(f"a chain of {cap - 1} drafts caps accept len at {cap}",),
        fix="The given num_steps / num_draft_tokens / topk do not match the run.",
        engine=run.engine,
        data={"run": run.source},
    )


def conflicts(run: LogRun) -> Finding | None:
    if not run.conflicts:
        return None
    return Finding(
        code="ENGINE_FORMAT_CONFLICT",
        severity=Severity.WARNING,
        title=f"{_name(run)}: the given engine and what the file shows disagree",
        evidence=tuple(run.conflicts),
        fix="Check the engine version the server ran (`pip show sglang` / `vllm`); the "
        "meaning of accept rate depends on it.",
        engine=run.engine,
        source="; ".join(run.format_sources) or None,
        data={"run": run.source},
    )


def no_data(run: LogRun) -> Finding | None:
    if run.spec_windows:
        return None
    return Finding(
        code="NO_ACCEPTANCE_DATA",
        severity=Severity.WARNING,
        title=f"No acceptance figure found in {run.source}",
        evidence=(f"{run.window_count} windows, {run.unparsed_lines} unparsed lines",),
        fix="Give a decode log with speculative decoding on, a metrics scrape or server-info JSON.",
        data={"run": run.source},
    )


def unparsed(run: LogRun) -> Finding | None:
    n = run.unparsed_lines
    if not n:
        return None
    return Finding(
        code="UNPARSED_LINES",
        severity=Severity.INFO,
        title=f"{n} line{'s' if n != 1 else ''} of {run.source} could not be read",
        evidence=tuple(f"{k}: {v}" for k, v in run.unparsed_reasons.most_common())
        + tuple(run.unparsed_examples),
        data={"run": run.source, "unparsed_lines": n},
    )


def run_findings(
    run: LogRun, expected_step0: float | None = None, expected_accept_len: float | None = None
) -> list[Finding]:
    """Every signature of one run."""
    zero = zero_acceptance(run)
    near = None if zero else near_zero_acceptance(run)
    out = [zero, near, acceptance_decay(run), None if zero or near else position_cliff(run)]
    out += [None if zero or near else full_drafts(run), falls_with_batch(run)]
    out.append(kv_scale_defaulted(run))
    if expected_step0 is not None:
        out.append(low_first_position(run, expected_step0))
    if expected_accept_len is not None:
        out.append(below_expected(run, expected_accept_len))
    out += [above_chain_cap(run), conflicts(run), no_data(run), unparsed(run)]
    return [f for f in out if f is not None]
