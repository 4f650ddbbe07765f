"""`probe(url)`: what a running SGLang or vLLM server accepts now, and how it was started.

- SGLang: `/get_server_info` (server arguments, speculative settings, version, and
  `internal_states[].avg_spec_accept_length`, a lifetime average), `/metrics` gauges (set at the
  last decode log line) when metrics are on.
- vLLM: two scrapes of `/metrics` `interval` seconds apart; the acceptance of that interval is the
  ratio of the counters' increases, per position too (`kit.engines.vllm.acceptance
  .INTERVAL_FROM_COUNTERS`), not the lifetime average the totals give.
- `requests=N`: N short greedy generations whose per-request figures (SGLang `meta_info`, vLLM
  `metrics.speculative_decoding` where `--per-request-spec-decode-metrics` is on) give a
  distribution, and traffic for the interval.

The server's own arguments come back in the report (`server_args`) as evidence for a verdict.
"""

from __future__ import annotations

import io
import time
from dataclasses import dataclass, field
from typing import Any

from kit.acceptance import prometheus, release, server_info, vllm_request, web
from kit.acceptance.analysis import analyze, summarize
from kit.acceptance.fields import flatten
from kit.acceptance.lines import add
from kit.acceptance.model import Kind, LogRun, Scope
from kit.engines import EngineRelease, parse_engine
from kit.errors import KitError
from kit.findings import Finding, Severity, ranked

PROMPTS = (
    "Explain in three sentences why the sky is blue.",
    "Write a Python function that returns the n-th Fibonacci number.",
    "List five capitals of European countries and one fact about each.",
    "Summarise the plot of a detective story in four sentences.",
)
DEFAULT_MAX_TOKENS = 64


@dataclass
class ProbeReport:
    """What the probe saw: the server, its settings, the figures by what they cover, findings."""

    url: str
    engine: str
    version: str | None
    server_args: dict[str, Any]
    run: LogRun
    interval_s: float | None = None
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def figures(self) -> dict[str, dict[str, Any]]:
        """Accept len by what it covers: the interval, the server's life, the requests sent."""
        out: dict[str, dict[str, Any]] = {}
        for scope in Scope:
            ws = [w for w in self.run.windows if w.kind.scope == scope]
            lens = sorted(w.accept_len for w in ws if w.accept_len is not None)
            if not ws:
                continue
            fig: dict[str, Any] = {"windows": len(ws)}
            if lens:
                fig["accept_len"] = {
                    "mean": round(sum(lens) / len(lens), 4),
                    "p50": lens[(len(lens) - 1) // 2],
                    "min": lens[0],
                    "max": lens[-1],
                }
            counted = [w for w in ws if w.drafted]
            if counted:
                drafted = sum(w.drafted for w in counted)
                fig["draft_acceptance"] = round(sum(w.accepted for w in counted) / drafted, 4)
            per_pos = [w.per_position for w in ws if w.per_position]
            if len(per_pos) == 1:
                fig["per_position"] = [round(p, 4) for p in per_pos[0]]
            out[scope.value] = fig
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "engine": self.engine,
            "version": self.version,
            "server_args": self.server_args,
            "interval_s": self.interval_s,
            "figures": self.figures(),
            "run": summarize(self.run),
            "findings": [f.to_dict() for f in ranked(self.findings)],
            "notes": self.notes,
        }


def probe(
    url: str,
    interval: float = 10.0,
    requests: int = 0,
    timeout: float = 10.0,
    max_tokens: int = DEFAULT_MAX_TOKENS,
) -> ProbeReport:
    """Probe a live server at `url` (e.g. http://127.0.0.1:30000). Raises `KitError` with the
    URL and the reason when it cannot be reached or is not an SGLang or vLLM server."""
    base = url.rstrip("/")
    info, metrics = _detect(base, timeout)
    if info is not None:
        report = _sglang(base, info, requests, timeout, max_tokens)
    else:
        report = _vllm(base, metrics, interval, requests, timeout, max_tokens)
    report.findings = analyze([report.run]).findings + _speculation_off(report)
    report.notes += report.run.notes
    return report


def _detect(base: str, timeout: float) -> tuple[dict | None, str | None]:
    """(SGLang server info, None) or (None, vLLM metrics text); raises when neither answers."""
    seen = []
    for path in ("/get_server_info", "/server_info"):
        try:
            info = web.fetch_json(base + path, timeout)
        except (web.NotFound, web.NotJSON) as e:
            seen.append(f"{path}: {e.problem}")
            continue
        if isinstance(info, dict) and ("internal_states" in info or "model_path" in info):
            return info, None
        seen.append(f"{path}: JSON without SGLang's server arguments")
    try:
        text = web.fetch_text(base + "/metrics", timeout)
    except web.NotFound as e:
        seen.append(f"/metrics: {e.problem}")
    else:
        if "vllm:" in text:
            return None, text
        seen.append("/metrics: no vllm: or sglang: metric")
    raise KitError("not an SGLang or vLLM server (" + "; ".join(seen) + ")", base)


def _release(name: str, version: str | None, run: LogRun) -> EngineRelease | None:
    """The release the server reports, when the kit models it; else a note."""
    if not version:
        return None
    try:
        return parse_engine(f"{name}=={version}")
    except KitError as e:
        run.notes.append(f"the server reports {name} {version}: {e.problem}; read by its format")
        return None


def _sglang(base: str, info: dict, requests: int, timeout: float, max_tokens: int) -> ProbeReport:
    run = LogRun(source=base)
    server_info.read(info, run)
    notes = []
    try:
        scrape = prometheus.parse(io.StringIO(web.fetch_text(base + "/metrics", timeout)), base)
    except web.NotFound:
        notes.append(
            "/metrics answers 404: metrics are off (start the server with --enable-metrics)"
        )
    else:
        if scrape.engine == "sglang":
            prometheus.sglang_window(scrape.first, run)
    for i in range(requests):
        body = {
            "text": PROMPTS[i % len(PROMPTS)],
            "sampling_params": {"max_new_tokens": max_tokens, "temperature": 0},
        }
        answer = web.fetch_json(base + "/generate", timeout, body)
        if not server_info.read(answer, run, i + 1):
            notes.append(f"request {i + 1}: the answer has no meta_info.spec_verify_ct")
    version = run.facts.get("server_version")
    release.infer(run, _release("sglang", version, run), "sglang")
    args = run.facts.get("server_args", {})
    return ProbeReport(base, "sglang", version, args, run, notes=notes)


def _scrape(base: str, timeout: float) -> prometheus.Scrape:
    return prometheus.parse(io.StringIO(web.fetch_text(base + "/metrics", timeout)), base)


def _vllm(
    base: str, text: str, interval: float, requests: int, timeout: float, max_tokens: int
) -> ProbeReport:
    run, notes = LogRun(source=base, engine_name="vllm"), []
    first, t0 = prometheus.parse(io.StringIO(text), base), time.monotonic()
    version = _optional(base + "/version", timeout).get("version")
    models = _optional(base + "/v1/models", timeout).get("data") or [{}]
    model = models[0].get("id")
    for i in range(requests):
        body = {"model": model, "prompt": PROMPTS[i % len(PROMPTS)], "max_tokens": max_tokens,
                "temperature": 0}  # fmt: skip
        answer = web.fetch_json(base + "/v1/completions", timeout, body)
        w = vllm_request.window(flatten(answer), i + 1) if isinstance(answer, dict) else None
        if w is not None:
            add(run, w, vllm_request.SIG, f"request {i + 1}")
    if requests and not run.window_count:
        notes.append("the completions carry no per-request acceptance: start the server with "
                     "--per-request-spec-decode-metrics summary for a distribution")  # fmt: skip
    time.sleep(max(0.0, interval - (time.monotonic() - t0)))
    second, elapsed = _scrape(base, timeout), time.monotonic() - t0
    _interval(first, second, run, notes)
    release.infer(run, _release("vllm", version, run), "vllm")
    args = {"model": model, "max_model_len": models[0].get("max_model_len"),
            "num_speculative_tokens": len(second.per_pos) or None}  # fmt: skip
    return ProbeReport(base, "vllm", version, args, run, round(elapsed, 3), notes=notes)


def _optional(url: str, timeout: float) -> dict:
    """A JSON object from an endpoint some builds lack ({} when it is missing or not JSON)."""
    try:
        value = web.fetch_json(url, timeout)
    except (web.NotFound, web.NotJSON):
        return {}
    return value if isinstance(value, dict) else {}


def _interval(
    first: prometheus.Scrape, second: prometheus.Scrape, run: LogRun, notes: list
) -> None:
    """The interval's window from the counters' increases; the lifetime one when none drafted."""
    names = set(first.sums) | set(second.sums)
    delta = {n: second.sums.get(n, 0.0) - first.sums.get(n, 0.0) for n in names}
    pos = {p: second.per_pos.get(p, 0.0) - first.per_pos.get(p, 0.0) for p in second.per_pos}
    drafts = delta.get("vllm:spec_decode_num_drafts", 0.0)
    if drafts < 0:
        notes.append("the counters went down between the scrapes: the server restarted")
    elif drafts > 0:
        add(run, prometheus.counters_window(delta, pos, Kind.PROBE), ("vllm", "probe"), "probe")
        return
    else:
        notes.append("nothing was drafted between the scrapes: the figures are the server's "
                     "lifetime totals (pass --requests N to send traffic in the interval)")  # fmt: skip
    if second.engine == "vllm":
        lifetime = prometheus.counters_window(second.sums, second.per_pos, Kind.COUNTERS)
        add(run, lifetime, ("vllm", "prometheus-v1"), "lifetime counters")


def _speculation_off(report: ProbeReport) -> list[Finding]:
    """A server that runs no speculative decoding has nothing to accept."""
    args = report.server_args
    off = (report.engine == "sglang" and not args.get("speculative_algorithm")) or (
        report.engine == "vllm"
        and not report.server_args.get("num_speculative_tokens")
        and not report.run.spec_windows
    )
    if not off:
        return []
    return [
        Finding(
            code="SPECULATION_OFF",
            severity=Severity.WARNING,
            title=f"{report.url}: the server runs no speculative decoding",
            evidence=tuple(f"{k}: {v}" for k, v in args.items()),
            fix="Start the server with the draft model (SGLang --speculative-algorithm EAGLE3 "
            "--speculative-draft-model-path …; vLLM --speculative-config).",
            engine=report.run.engine,
            data={"url": report.url},
        )
    ]
