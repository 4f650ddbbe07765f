"""Which release wrote a run, from the formats it printed and the arithmetic of its rates.

The format narrows a version range (a `Decode batch [N],` header is 0.5.4; no trailing `, ` is
≥0.5.9; `cap len` is ≥0.5.16); the logged (accept len, accept rate) pairs then say which rate
formula was in force, and with it the number of draft tokens D. When more than one formula fits,
every fitting one is kept as a possible reading (`LogRun.readings`) instead of picking one. A release
the user gives wins; disagreement between it and the log (or the server's own version) is
recorded as a conflict.
"""

from __future__ import annotations

from collections.abc import Iterable

from packaging.version import InvalidVersion, Version

from kit.acceptance.model import LogRun
from kit.engines import RELEASES, EngineRelease, Row, VersionRange, pick
from kit.engines.sglang import acceptance as sglang
from kit.engines.sglang.acceptance import RateFormula
from kit.engines.vllm import acceptance as vllm

MAX_D = 64
SAMPLE = 2000


def _intersect(a: VersionRange | None, b: VersionRange) -> VersionRange | None:
    if a is None:
        return b
    first = max(a.first, b.first, key=Version)
    untils = [u for u in (a.until, b.until) if u is not None]
    until = min(untils, key=Version) if untils else None
    if until is not None and Version(first) >= Version(until):
        return VersionRange(first, first)  # empty: the caller reports the conflict
    return VersionRange(first, until)


def _hull(ranges: Iterable[VersionRange]) -> VersionRange:
    rs = list(ranges)
    first = min((r.first for r in rs), key=Version)
    until = None if any(r.until is None for r in rs) else max((r.until for r in rs), key=Version)
    return VersionRange(first, until)


def _empty(r: VersionRange) -> bool:
    return r.until is not None and Version(r.first) >= Version(r.until)


def _decode_rows(sig: tuple) -> list[Row]:
    """Decode formats a signature allows; a trimmed line (trailing None) or bare fields (header
    "fields") leave those parts open."""
    _, header, rate, graph, trailing, _extras = sig
    match = [
        row
        for row in sglang.DECODE_FORMATS
        if header in (row.value.header, "fields")
        and (header == "fields" or row.value.graph == (graph is not None))
        and trailing in (row.value.trailing, None)
        and (rate is None or row.value.rate == rate)
    ]
    return [r for r in match if r.value.default] or match


def format_range(run: LogRun) -> None:
    """Narrow `run.release_range` from every format signature seen."""
    rng: VersionRange | None = None
    for sig in run.formats:
        rows: list[Row] = []
        if sig[0] == "sglang" and sig[1] in ("dot", "iter", "comma"):
            rows = _decode_rows(sig)
            if not rows:
                run.conflicts.append(f"decode-line shape {sig[1:5]} matches no known release")
                continue
            rng = _intersect(rng, _hull(r.versions for r in rows))
            extra_rows = [
                sglang.FIELD_RANGES[k] for k in (sig[3], *sig[5]) if k in sglang.FIELD_RANGES
            ]
            for r in extra_rows:
                rng = _intersect(rng, r.versions)
            rows += extra_rows
        elif sig[0] == "sglang" and sig[1] == "meta_info":
            rows = [sglang.META_KEYS[k] for k in sig[2]]
            for r in rows:
                rng = _intersect(rng, r.versions)
        elif sig[0] == "sglang" and sig[1] == "prometheus" and sig[2]:
            rng = _intersect(rng, VersionRange("0.5.3.post2"))
        elif sig[0] == "vllm" and sig[1] in vllm.FAMILIES:
            rows = [vllm.FAMILIES[sig[1]]]
            hint = vllm.LOG_CALL_LINE.get(sig[2])
            if hint is not None and _overlaps(hint.versions, rows[0].versions):
                rows.append(hint)  # the call line narrows the era only when it agrees
            for r in rows:
                rng = _intersect(rng, r.versions)
        for r in rows:
            if r.source not in run.format_sources:
                run.format_sources.append(r.source)
    if rng is not None and _empty(rng):
        run.conflicts.append("the file mixes line formats of different releases")
        rng = None
    run.release_range = rng


def _pairs(run: LogRun) -> list[tuple[float, float]]:
    pairs = [
        (w.accept_len, w.accept_rate)
        for w in run.windows
        if w.kind == "decode" and w.accept_len is not None and w.accept_rate is not None
    ]
    return pairs[:: max(1, len(pairs) // SAMPLE)]


def _fitting_n(formula: RateFormula, pairs: list[tuple[float, float]], n: int | None) -> list[int]:
    candidates = [n] if n else range(2, MAX_D + 1)
    return [c for c in candidates if all(formula.fits(al, ar, c) for al, ar in pairs)]


def _known_n(run: LogRun, formula: RateFormula) -> int | None:
    if formula.denominator == "num_steps + 1":
        if run.num_steps:
            return run.num_steps + 1
        return run.num_draft_tokens if run.topk in (None, 1) else None
    if run.num_draft_tokens:
        return run.num_draft_tokens
    return run.num_steps + 1 if run.num_steps and run.topk == 1 else None


def _set_denominator(run: LogRun, formula: RateFormula, n: int) -> None:
    """Record the n the rates imply; fill D or num_steps from it when not given."""
    run.rate_denominator = n
    if formula.denominator == "D" and not run.num_draft_tokens:
        run.num_draft_tokens = n
        run.notes.append(f"D = {n} inferred from accept len / accept rate")
    if formula.denominator == "num_steps + 1" and not run.num_steps:
        run.num_steps = n - 1
        run.notes.append(f"num_steps = {n - 1} inferred from accept len / accept rate")


def sglang_formula(run: LogRun, given: EngineRelease | None) -> None:
    """Pick the accept-rate formula row (and D) in force for an SGLang run."""
    pairs = _pairs(run)
    rows = [r for r in sglang.ACCEPT_RATE if _overlaps(r.versions, run.release_range)]
    if given is not None:
        row = pick(sglang.ACCEPT_RATE, given)
        run.formula = row
        if row.value is not None and pairs:
            fits = _fitting_n(row.value, pairs, _known_n(run, row.value))
            if len(fits) == 1:
                _set_denominator(run, row.value, fits[0])
            elif not fits:
                run.conflicts.append(
                    f"logged accept rates do not follow {given}'s formula {row.value.expr}"
                    + _fitting_hint(run, pairs)
                )
        elif row.value is None and pairs:
            run.conflicts.append(f"{given} prints no accept rate, but this log has one")
        return
    if not pairs:
        run.formula = rows[0] if len(rows) == 1 else None
        return
    fitting = []
    for r in rows:
        if r.value is None:
            continue
        ns = _fitting_n(r.value, pairs, _known_n(run, r.value))
        if ns:
            fitting.append((r, ns))
    if not fitting:
        run.conflicts.append("the logged accept rates fit no known SGLang formula")
        return
    run.readings = [_reading(r, ns) for r, ns in fitting]
    if len(fitting) > 1:  # the text does not say which: every fitting reading is reported
        run.notes.append(
            "the printed rates fit several releases' formulas; possible readings: "
            + "; ".join(f"{r.versions}: {r.value.expr}" for r, _ in fitting)
        )
        return
    row, ns = fitting[0]
    run.formula = row
    if len(ns) == 1:
        _set_denominator(run, row.value, ns[0])
    run.release_range = _intersect(run.release_range, row.versions)
    run.format_sources.append(row.source)


def _fitting_hint(run: LogRun, pairs: list[tuple[float, float]]) -> str:
    """Every formula the logged rates do fit, within the releases the line format allows; when
    several fit, their rates coincide here, and the hint says the log cannot tell them apart."""
    fitting = []
    for r in sglang.ACCEPT_RATE:
        if r.value is None or not _fitting_n(r.value, pairs, _known_n(run, r.value)):
            continue
        span = _intersect(run.release_range, r.versions)
        if not _empty(span):
            fitting.append(f"{span} ({r.value.expr})")
    if not fitting:
        return ""
    if len(fitting) == 1:
        return f"; they fit {fitting[0]}"
    return (
        f"; they fit {' and '.join(fitting)}, which print the same rates here: "
        "the log alone cannot tell these releases apart"
    )


def _reading(row: Row, ns: list[int]) -> dict:
    """One possible reading of the printed rate: formula, releases, n, what zero prints."""
    n = ns[0] if len(ns) == 1 else None
    return {
        "versions": str(row.versions),
        "formula": row.value.expr,
        "meaning": row.value.meaning,
        "denominator": n,
        "zero_acceptance_rate": round(row.value.zero_rate(n), 4) if n else None,
        "source": row.source,
    }


def _server_version(run: LogRun, given: EngineRelease | None) -> None:
    """The version a server reported (/get_server_info) against the release given."""
    reported = run.facts.get("server_version")
    if given is None or not reported or given.name != run.engine_name:
        return
    try:
        same = Version(reported) == given.version
    except InvalidVersion:
        same = False
    if not same:
        run.conflicts.append(f"--engine {given} given, but the server reports version {reported}")


def _overlaps(r: VersionRange, rng: VersionRange | None) -> bool:
    return rng is None or not _empty(_intersect(rng, r))


def label(name: str, rng: VersionRange | None) -> str:
    """`sglang==0.5.4` when the range holds one known release, else `sglang>=0.5.9,<0.5.11`."""
    if rng is None:
        return name
    known = RELEASES.get(name, ())
    inside = [v for v in known if EngineRelease(name, Version(v)) in rng]
    if len(inside) == 1 and Version(rng.first) >= Version(known[0]):
        return f"{name}=={inside[0]}"
    return f"{name}{rng}".replace(">=0,", "")


def infer(run: LogRun, given: EngineRelease | None, name: str | None = None) -> None:
    """Fill the run's release range, formula, D and engine label; record conflicts.

    `given` is a release the user named; `name` an engine named without one (`--engine sglang`).
    """
    format_range(run)
    name = given.name if given is not None else name
    if name and run.engine_name and run.engine_name != name:
        run.conflicts.append(
            f"--engine {given or name} given, but the log was written by {run.engine_name}"
        )
    elif name and run.engine_name is None:
        run.engine_name = name
    _server_version(run, given)
    if given is not None:
        if (
            run.engine_name == given.name
            and run.release_range is not None
            and (given not in run.release_range)
        ):
            run.conflicts.append(
                f"--engine {given} given, but the line format is that of "
                f"{label(given.name, run.release_range)} ({'; '.join(run.format_sources)})"
            )
        run.engine, run.engine_given = str(given), True
    if run.engine_name == "sglang":
        sglang_formula(run, given if given and given.name == "sglang" else None)
    if not run.engine_given and run.engine_name:
        run.engine = label(run.engine_name, run.release_range)
        if "server_version" in run.facts:
            run.engine = f"{run.engine_name}=={run.facts['server_version']}"
