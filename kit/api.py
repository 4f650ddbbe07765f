"""The kit's public calls: what a notebook, a script or the CLI asks, on paths and release strings.

Each call takes what a user has at hand (a checkpoint folder, a config folder, `sglang==0.5.10`,
log files, a URL) and returns a report with `findings` and `to_dict()`. Heavy libraries (torch,
transformers, plotly) load inside the calls that need them, so `import kit` stays fast.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from kit.extras import names_extras

if TYPE_CHECKING:
    from kit.acceptance.analysis import AcceptanceReport
    from kit.acceptance.live import ProbeReport
    from kit.checkpoint.inspection import InspectionReport
    from kit.deployment import DeploymentReport
    from kit.load.replay import MatrixRow
    from kit.load.report import LoadReport
    from kit.load.rewrite import FixPlan
    from kit.offline_acceptance import OfflineRow
    from kit.report.runs import Run
    from kit.tracing.shapes import TraceReport
    from kit.verdict import Diagnosis

Pathish = str | Path


@names_extras
def inspect(draft: Pathish, *, stats: str = "sampled") -> InspectionReport:
    """What the checkpoint holds, which trainer wrote it, what looks wrong. `stats`: "none"
    (headers only), "sampled" (a bounded sample of each tensor) or "full" (every byte)."""
    from kit.checkpoint.inspection import StatsRead, inspect_checkpoint

    return inspect_checkpoint(draft, stats=StatsRead[stats.upper()])


@names_extras
def simulate(draft: Pathish, engine: str, *, config: Pathish | None = None) -> LoadReport:
    """What one engine release does with every key of the checkpoint (`engine` like
    `sglang==0.5.10`), headers only; `config` defaults to the config.json beside it."""
    from kit.load.replay import simulate_load

    ck, cfg = _draft(draft, config)
    return simulate_load(ck, cfg, engine)


@names_extras
def release_matrix(draft: Pathish, engine: str = "all") -> list[MatrixRow]:
    """Every release of one engine (or of every engine: "all"), grouped by what it does with
    this checkpoint as saved and once config.json is rewritten."""
    from kit.engines import ENGINES
    from kit.load.replay import release_matrix as matrix

    ck, cfg = _draft(draft, None)
    return matrix(ck, cfg, list(ENGINES) if engine == "all" else [engine])


@names_extras
def fix(
    draft: Pathish, engine: str, *, out: Pathish | None = None, in_place: bool = False
) -> tuple[FixPlan, Path | None]:
    """The renames and config.json this release needs, and (with `out` or `in_place`) the fixed
    checkpoint written, verified and fsynced: (plan, written folder or None)."""
    from kit.checkpoint.files import open_checkpoint
    from kit.load.rewrite import plan_fix, write_fixed

    ck, cfg = _draft(draft, None)
    plan = plan_fix(ck, cfg, engine)
    if not (out or in_place) or not plan.changes_anything:
        return plan, None
    if ck.source is not None:
        from kit.commands.fix import WRITE_NEEDS_BYTES
        from kit.errors import KitError

        raise KitError(WRITE_NEEDS_BYTES, Path(ck.source.label))
    written = write_fixed(open_checkpoint(draft), plan, Path(out) if out else None, in_place)
    return plan, written


@names_extras
def trace(
    draft: Pathish,
    target_config: Pathish,
    engine: str,
    *,
    target_class: str | None = None,
    aux_capture: bool | None = None,
    cuda_graph: bool = False,
    device: str = "meta",
) -> TraceReport:
    """Which target states reach the draft, how wide, whether fc runs, and every hook's shape
    (on the meta device by default: full-scale drafts trace without memory)."""
    from kit.checkpoint.config import load_draft_config, load_target_config
    from kit.checkpoint.hub import resolve
    from kit.tracing.shapes import trace_draft

    draft, target_config = resolve(draft), resolve(target_config, target=True)
    return trace_draft(
        load_target_config(target_config), load_draft_config(draft), engine,
        target_class, aux_capture, cuda_graph, device,
    )  # fmt: skip


@names_extras
def analyze_logs(
    logs: Sequence[Pathish],
    *,
    engine: str | None = None,
    num_draft_tokens: int | None = None,
    expected_accept_len: float | None = None,
    baseline: Pathish | None = None,
) -> AcceptanceReport:
    """Server logs, metrics or pasted lines read by field under the release's formula; zero and
    near-zero acceptance, the offline expectation and a run without speculation as references."""
    from kit.acceptance import analyze, parse_files

    opts = {"engine": engine, "num_draft_tokens": num_draft_tokens}
    runs = parse_files([Path(p) for p in logs], **opts)
    base = parse_files([Path(baseline)], **opts)[0] if baseline else None
    return analyze(runs, expected_accept_len=expected_accept_len, baseline=base)


@names_extras
def probe(url: str, *, interval: float = 10.0, requests: int = 0) -> ProbeReport:
    """A running SGLang or vLLM server's acceptance now, its settings, and what they mean."""
    from kit.acceptance.live import probe as live_probe

    return live_probe(url, interval=interval, requests=requests)


@names_extras
def offline(
    target: Pathish,
    draft: Pathish,
    engine: str | None = None,
    *,
    aux_capture: bool | None = None,
    target_class: str | None = None,
    backend: str | None = None,
    **options: Any,
) -> OfflineRow:
    """What the draft reaches on its target: healthy (no `engine`), or as `engine` deploys it
    (its load and its capture for the target class; `aux_capture=False`: given off), judged
    against healthy. `options`: k, prompts, temperature, top_p, seed, prompt_format, device …

    `backend="vllm"` or `"sglang"`: the same prompts and settings measured in the installed
    engine (`tensor_parallel_size`, `engine_dtype`, `engine_log` options; SGLang serves on
    127.0.0.1, on a CPU with the kit's stand-ins); the row is the engine's, its first finding
    says whether it agrees with the kit's prediction for that release."""
    from kit.checkpoint.hub import require_local, resolve
    from kit.offline_acceptance import as_deployed, healthy

    target, draft = resolve(target, target=True), resolve(draft)
    require_local(target, draft)
    if backend is not None:
        return _engine_row(target, draft, engine, backend, aux_capture, target_class, options)
    if engine is not None:  # both rows counted as the release counts, so they compare
        options.setdefault("count_as", engine)
    reference = healthy(target, draft, **options)
    if engine is None:
        return reference
    return as_deployed(
        target, draft, engine, aux_capture=aux_capture, target_class=target_class,
        against=reference, **options,
    )  # fmt: skip


def _engine_row(target, draft, engine, backend, aux_capture, target_class, options):
    from kit.errors import KitError

    if backend == "vllm":
        from kit.offline_acceptance.vllm_backend import rows_in_vllm as rows_in
    elif backend == "sglang":
        from kit.offline_acceptance.sglang_backend import rows_in_sglang as rows_in
    else:
        raise KitError(f"unknown backend {backend!r}: vllm or sglang")
    rows = rows_in(
        target, draft, engine, aux_capture=aux_capture, target_class=target_class, **options
    )
    return rows[-1]


@names_extras
def check_deployment(launch: Pathish | None = None, **inputs: Any) -> DeploymentReport:
    """The server's launch line (text or script) read with that release's flags, and what the
    draft and target configs and tokenizers disagree on (`draft`, `target_config`, `engine`,
    `train_tokenizer`, `served_tokenizer`)."""
    from kit.checkpoint.hub import resolve_inputs
    from kit.deployment import check

    return check(launch, **resolve_inputs(inputs))


@names_extras
def doctor(draft: Pathish | None = None, **inputs: Any) -> Diagnosis:
    """Every check the inputs allow, evidence reconciled, root causes first (see
    `kit.verdict.diagnose` for the inputs: target_config, engine, logs, launch, target …)."""
    from kit.checkpoint.hub import resolve_inputs
    from kit.verdict import diagnose

    inputs = resolve_inputs({"draft": draft, **inputs})
    return diagnose(**inputs)


@names_extras
def run(out: Pathish, **inputs: Any) -> Run:
    """The notebooks run headless on the inputs (`kit.report.runbook.RunInputs`' fields; none: the
    bundled incident), written to `out` with `postmortem.html` and `findings.json`."""
    from kit.checkpoint.hub import resolve_inputs
    from kit.report.runbook import RunInputs
    from kit.report.runbook import run as run_notebooks

    return run_notebooks(RunInputs(**resolve_inputs(inputs)), Path(out))


def _draft(draft: Pathish, config: Pathish | None):
    """The checkpoint and its config (the one beside it unless given)."""
    from kit.checkpoint.config import load_draft_config
    from kit.checkpoint.files import open_checkpoint
    from kit.errors import KitError

    ck = open_checkpoint(draft)
    path = config or ck.config_path
    if path is None:
        raise KitError("no config.json beside the checkpoint; pass --config", ck.path)
    return ck, load_draft_config(path)
