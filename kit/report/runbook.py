"""Run the notebooks headless with papermill: the same analyses a person steps through, in CI.

A run is a plan of notebook steps, each with its parameters and the steps whose recorded results it
needs (acceptance analysis waits for the offline expected accept length). Each notebook is read
from its percent script (`kit.report.notebook.read_script`) and executed in memory; independent steps
run in parallel kernels in one process; every kernel gets the `python3` kernel, a cell timeout,
the repo root as working directory and plotly's own MIME type for figures (JupyterLab draws it;
plotly.js goes into the postmortem once, not into every executed notebook). A failed step is
captured (notebook, cell, error) and the others still run. The executed notebooks are the single
source of truth: `run.json` lists what ran, and every result is read back from their records.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from kit.errors import KitError, require_inputs
from kit.release_choice import ReleaseChoice
from kit.report import postmortem
from kit.report.notebook import HEADLESS, NOTEBOOKS, ROOT, read_script, script_path
from kit.report.record import read_records
from kit.report.runs import SUMMARY_NAME, TITLES, Run, Status, StepError, StepResult

DATA = ROOT / "data"

# Longest first, so the steps waiting on it do not lengthen the run: the offline acceptance (which
# the acceptance notebook needs), then the full-scale trace.
START_ORDER = (
    "05_offline_acceptance",
    "03_hidden_state_tracing",
    "01_key_inspection",
    "02_load_weights_simulation",
    "06_deployment_check",
    "04_acceptance_rate",
)


@dataclass
class RunInputs:
    """What a run analyses. Empty inputs mean the bundled incident (`bundled_incident()`)."""

    draft: Path | None = None  # draft checkpoint folder: keys, load simulation, offline acceptance
    target: Path | None = None  # transformers target folder: offline acceptance
    target_config: Path | None = None  # target config.json: tracing (default: the target's)
    trace_draft: Path | None = None  # draft config for tracing (default: `draft`)
    engine: str | None = None  # None (or a bare name): from the launch line and the logs
    logs: list[Path] = field(default_factory=list)
    baseline_log: Path | None = None  # a server run without speculation (for the speedup)
    target_class: str | None = None
    aux_capture: bool | None = None  # None: what the engine release does for the target class
    num_draft_tokens: int | None = None
    k: int | None = None  # drafts per step offline (default: the deployment's chain, else 5)
    num_prompts: int | None = None  # offline acceptance on the first N held-out prompts
    prompt_format: str = "raw"  # offline prompts raw or through the target's chat template
    temperature: float = 0.0  # offline verification: 0 greedy, above speculative sampling
    top_p: float = 1.0
    seed: int = 0
    launch: str | Path | None = None  # the server's launch line, or a script holding it
    train_tokenizer: Path | None = None  # the tokenizer the draft was trained with
    probe: str | None = None  # a running server's URL: its live figures (notebook 4)
    probe_interval: float = 10.0  # seconds between the probe's two metrics scrapes
    watch: Path | None = None  # a `kit watch` report: the running engine's evidence, ranked first

    @property
    def chain_length(self) -> int:
        """Drafts per verify step to measure offline, so the expectation is comparable with the
        server: a topk=1 chain of D draft tokens drafts D - 1 (the first is the target's own)."""
        if self.k is not None:
            return self.k
        return self.num_draft_tokens - 1 if self.num_draft_tokens else 5

    @property
    def empty(self) -> bool:
        return not (
            self.draft or self.target or self.target_config or self.logs or self.launch
            or self.probe
        )  # fmt: skip

    def with_bundled_incident(self) -> RunInputs:
        """The incident as the team held it (`kit.incident`): the draft checkpoint their trainer
        wrote, the Kimi-K2.5 target's config, the launch line and the server logs in the order
        they were written, with the options given here kept. Nothing says which release ran or
        which fault it had: the verdict has to find both."""
        from kit import incident

        return replace(
            self,
            draft=incident.draft_checkpoint(),
            target_config=incident.TARGET_CONFIG,
            logs=list(incident.LOGS),
            baseline_log=incident.BASELINE_LOG,
            launch=self.launch or incident.LAUNCH,
        )

    @classmethod
    def bundled_incident(cls) -> RunInputs:
        """The incident as the team held it, nothing more."""
        return cls().with_bundled_incident()

    def to_dict(self) -> dict[str, Any]:
        """Paths as the notebooks get them (`_s`), so the shared page names no machine path."""
        d = asdict(self)
        for key, value in d.items():
            if isinstance(value, Path):
                d[key] = _s(value)
        d["logs"] = [_s(p) for p in self.logs]
        return d


@dataclass(frozen=True)
class Step:
    """One notebook to execute: its parameters and the records it takes from earlier steps."""

    name: str
    params: dict[str, Any]
    # parameter name -> (step name, record name): filled in once that step has finished
    needs: dict[str, tuple[str, str]] = field(default_factory=dict)

    @property
    def title(self) -> str:
        return TITLES.get(self.name, self.name)


def _s(p: Path | None) -> str | None:
    """A path as the kernel (cwd = the repository root) should see it: relative when it lies in
    the repository, so evidence in the postmortem reads `data/…` rather than a machine path."""
    if p is None:
        return None
    resolved = Path(p).resolve()
    return str(resolved.relative_to(ROOT)) if resolved.is_relative_to(ROOT) else str(resolved)


def plan(inputs: RunInputs) -> tuple[list[Step], list[StepResult]]:
    """The steps the inputs allow, and the ones skipped with the input they lack."""
    draft, target = _s(inputs.draft), _s(inputs.target)
    target_config = _s(inputs.target_config) or target
    trace_draft = _s(inputs.trace_draft) or draft
    planned = [
        *_key_steps(inputs, draft),
        _trace_step(inputs, trace_draft, target_config),
        _offline_step(inputs, draft, target),
        _acceptance_step(inputs, bool(draft and target)),
        _deployment_step(inputs, trace_draft, target_config),
    ]
    steps = sorted(
        (p for p in planned if isinstance(p, Step)), key=lambda s: START_ORDER.index(s.name)
    )
    return steps, [p for p in planned if isinstance(p, StepResult)]


def _skip(name: str, reason: str) -> StepResult:
    return StepResult(name, Status.SKIPPED, reason=reason)


def _key_steps(inputs: RunInputs, draft: str | None) -> list[Step | StepResult]:
    if not draft:
        return [
            _skip(n, "no --draft given")
            for n in ("01_key_inspection", "02_load_weights_simulation")
        ]
    return [
        Step("01_key_inspection", {"draft": draft}),
        Step("02_load_weights_simulation", {"draft": draft, "engine": inputs.engine}),
    ]


def _trace_step(
    inputs: RunInputs, draft: str | None, target_config: str | None
) -> Step | StepResult:
    if not (target_config and draft):
        return _skip("03_hidden_state_tracing", "needs --draft and --target-config (or --target)")
    params = {"target_config": target_config, "draft": draft, "engine": inputs.engine,
              "target_class": inputs.target_class, "aux_capture": inputs.aux_capture}  # fmt: skip
    return Step("03_hidden_state_tracing", params)


def _offline_step(inputs: RunInputs, draft: str | None, target: str | None) -> Step | StepResult:
    from kit.checkpoint.hub import is_remote

    if not (draft and target):
        needs = " and ".join(f"--{n}" for n, v in (("draft", draft), ("target", target)) if not v)
        return _skip("05_offline_acceptance", f"needs {needs} (a transformers target folder)")
    if is_remote(draft) or is_remote(target):
        return _skip(
            "05_offline_acceptance", "needs the weights on disk, not their Hub headers: --download"
        )
    params = {
        "target": target,
        "draft": draft,
        "engine": inputs.engine,
        "aux_capture": inputs.aux_capture,
        "target_class": inputs.target_class,
        "k": inputs.chain_length,
        "num_prompts": inputs.num_prompts,
        "prompt_format": inputs.prompt_format,
        "temperature": inputs.temperature,
        "top_p": inputs.top_p,
        "seed": inputs.seed,
    }
    return Step("05_offline_acceptance", params)


def _acceptance_step(inputs: RunInputs, offline: bool) -> Step | StepResult:
    """Logs and a live server are read by notebook 4, against the offline expectation."""
    if not (inputs.logs or inputs.probe):
        return _skip("04_acceptance_rate", "no --log or --probe given")
    needs = (
        {"expected_accept_len": ("05_offline_acceptance", "expected_accept_len")} if offline else {}
    )
    params = {
        "logs": [_s(p) for p in inputs.logs],
        "baseline": _s(inputs.baseline_log),
        "engine": inputs.engine,
        "num_draft_tokens": inputs.num_draft_tokens,
        "expected_accept_len": None,
        "probe_url": inputs.probe,
        "probe_interval": inputs.probe_interval,
    }
    return Step("04_acceptance_rate", params, needs)


def _is_file(text: str | Path) -> bool:
    try:
        return Path(text).is_file()
    except OSError:  # a launch line longer than a file name may be
        return False


def _deployment_step(
    inputs: RunInputs, draft: str | None, target_config: str | None
) -> Step | StepResult:
    """The launch line and the configs (either is enough: config rules need no launch line)."""
    if not (inputs.launch or (target_config and draft)):
        return _skip("06_deployment_check", "needs --launch, or --draft and --target-config")
    launch = inputs.launch
    if launch is not None and _is_file(launch):
        launch = _s(Path(launch))  # a script: as the kernel sees it; a line: as given
    params = {
        "launch": launch,
        "draft": draft,
        "target_config": target_config,
        "engine": inputs.engine,
        "train_tokenizer": _s(inputs.train_tokenizer),
        "served_tokenizer": None,
    }
    return Step("06_deployment_check", params)


@contextmanager
def kernel_env() -> Iterator[None]:
    """Environment every kernel inherits: kit importable, figures as plotly's MIME type only (no
    5 MB copy of plotly.js per notebook), one thread per kernel, and no progress bars: nobody
    watches a headless kernel (`kit.report.notebook.watched`), and a bar is a widget in its notebook."""
    wanted = {
        "PLOTLY_RENDERER": "plotly_mimetype",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        "OMP_NUM_THREADS": "1",
        "TQDM_DISABLE": "1",
        HEADLESS: "1",
    }
    saved = {k: os.environ.get(k) for k in wanted}
    os.environ.update(wanted)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def execute_notebook(
    source: Path, output: Path, params: dict[str, Any], timeout: float
) -> StepError | None:
    """Execute one notebook script with papermill; the error (cell, ename, evalue) instead of
    raising."""
    import papermill as pm
    from papermill.exceptions import PapermillExecutionError

    from kit.report.kernel import KernelManager

    # papermill's parameter parser cannot read `engine = "sglang==0.5.10"` (two `=`) and then
    # warns that the engine parameter is unknown; it is injected all the same
    logging.getLogger("papermill").setLevel(logging.ERROR)

    try:
        pm.execute_notebook(
            read_script(source),
            str(output),
            parameters=params,
            kernel_name="python3",
            language="python",  # a script need not carry a kernelspec header
            execution_timeout=timeout,
            # the kernel starts in ROOT; papermill's own `cwd` would chdir this whole process,
            # under the feet of the other notebooks' threads (papermill#473)
            resources={"metadata": {"path": str(ROOT)}},
            progress_bar=False,
            # quiet the kernel's own log: its start-up warning about TCP on localhost, and the
            # "KeyboardInterrupt caught" line jupyter_client's shutdown (SIGINT first) provokes;
            # a cell's error still comes back through papermill
            extra_arguments=["--IPKernelApp.log_level=CRITICAL"],
            kernel_manager_class=KernelManager,  # a reply found within 0.5 s (kit.report.kernel)
        )
    except PapermillExecutionError as e:
        return StepError(e.exec_count, e.ename, e.evalue, failing_line(e.source, e.traceback))
    except Exception as e:  # a timeout, a dead kernel: still one step's failure, not the run's
        lines = str(e).strip().splitlines()
        return StepError(None, type(e).__name__, lines[-1] if lines else "")
    return None


_CELL_FRAME = re.compile(r"Cell In\[\d+\], line (\d+)")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def failing_line(source: str, traceback: list[str]) -> str:
    """The cell's line that raised, from IPython's `Cell In[N], line L` frame (the first line of
    the cell when the traceback names none)."""
    lines = source.splitlines()
    for frame in traceback:
        m = _CELL_FRAME.search(_ANSI.sub("", frame))
        if m and 0 < int(m.group(1)) <= len(lines):
            return lines[int(m.group(1)) - 1].strip()[:80]
    return next((ln.strip() for ln in lines if ln.strip()), "")[:80]


def execute(
    steps: list[Step],
    out_dir: Path,
    *,
    timeout: float = 300,
    workers: int = 2,
    progress: bool = True,
    notebooks: Path = NOTEBOOKS,
) -> list[StepResult]:
    """Run the steps, each as soon as the steps it needs have finished, `workers` at a time."""
    out_dir.mkdir(parents=True, exist_ok=True)
    done: dict[str, StepResult] = {}
    pending = list(steps)
    planned = {s.name for s in steps}

    def ready(step: Step) -> bool:
        return all(src in done for src, _ in step.needs.values() if src in planned)

    with kernel_env(), ThreadPoolExecutor(workers) as pool, _Progress(progress) as bar:
        running: dict[Future[StepResult], Step] = {}
        while pending or running:
            for step in [s for s in pending if ready(s)]:
                params = dict(step.params)
                for param, (src, name) in step.needs.items():
                    if src in done and name in done[src].records:
                        params[param] = done[src].records[name]
                pending.remove(step)
                job = (step.name, out_dir, params, timeout, notebooks)
                running[pool.submit(_run_step, *job)] = step
                bar.start(step.name)
            finished, _ = wait(running, return_when=FIRST_COMPLETED)
            for future in finished:
                result = future.result()
                del running[future]
                done[result.name] = result
                bar.finish(result)
    return [done[s.name] for s in steps]


def _run_step(
    name: str, out_dir: Path, params: dict[str, Any], timeout: float, notebooks: Path
) -> StepResult:
    """One notebook executed and its records read back (in a worker thread)."""
    out = out_dir / f"{name}.ipynb"
    t0 = time.perf_counter()
    error = execute_notebook(script_path(name, notebooks), out, params, timeout)
    records = read_records(out) if out.is_file() else {}
    return StepResult(
        name,
        Status.FAILED if error else Status.OK,
        params,
        out.name if out.is_file() else None,
        time.perf_counter() - t0,
        error,
        records=records,
    )


class _Progress:
    """Which notebook is running, with elapsed time: a live display on a terminal, a line per
    start and finish otherwise (CI logs)."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self.tasks: dict[str, Any] = {}
        self.live = False

    def __enter__(self) -> _Progress:
        if self.enabled:
            from rich.console import Console
            from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self.console = Console(stderr=True)
            self.live = self.console.is_terminal
            self.progress = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                TimeElapsedColumn(),
                console=self.console,
            )
            if self.live:
                self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live:
            self.progress.__exit__(*exc)

    def start(self, name: str) -> None:
        if self.live:
            self.tasks[name] = self.progress.add_task(f"running {name}", total=1)
        elif self.enabled:
            self.console.print(f"running {name}", highlight=False)

    def finish(self, result: StepResult) -> None:
        mark = "[green]ok[/]" if result.status == Status.OK else "[bold red]FAILED[/]"
        if self.live:
            self.progress.update(
                self.tasks[result.name], description=f"{mark} {result.name}", completed=1
            )
        elif self.enabled:
            self.console.print(f"{mark} {result.name} ({result.seconds:.1f} s)", highlight=False)


def _engine_seen(given: str | None, seen: str | None) -> str | None:
    """The release the watched engine reported, unless a release was asked for."""
    from kit.release_choice import is_release

    return given if is_release(given) else seen or given


def with_release(inputs: RunInputs) -> tuple[RunInputs, ReleaseChoice]:
    """The inputs with the release every notebook judges by: the one given, else the newest the
    launch line and the logs allow together (`kit.release_choice`, as doctor chooses it)."""
    from kit.acceptance import parse_files
    from kit.release_choice import choose, engine_name, is_release

    if is_release(inputs.engine):
        return inputs, choose(inputs.engine)
    served = None
    if inputs.launch is not None:
        from kit.deployment.lines import read_served

        served = read_served(inputs.launch, inputs.engine)
    name = engine_name(inputs.engine) or (served.command.engine if served else None)
    runs = parse_files(inputs.logs, engine=name) if inputs.logs else []
    choice = choose(
        inputs.engine,
        launch_engine=served.command.engine if served else None,
        launch_fitting=served.fitting if served else None,
        runs=runs,
    )
    return replace(inputs, engine=str(choice.release)), choice


def run(
    inputs: RunInputs,
    out_dir: Path,
    *,
    timeout: float = 300,
    workers: int = 2,
    progress: bool = True,
) -> Run:
    """Plan, execute and write `run.json`, `findings.json` and `postmortem.html` into `out_dir`."""
    i = inputs
    require_inputs(i.draft, i.target, i.target_config, i.trace_draft, *i.logs, i.baseline_log,
                   i.train_tokenizer)  # fmt: skip
    try:  # before any notebook runs: a file in the way is one clear error
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise KitError(f"cannot use as the run folder: {e.strerror}", out_dir) from None
    seen = None
    if inputs.watch is not None:
        from kit.watch.as_evidence import observed

        seen = observed(inputs.watch)  # and the draft, target and release the engine ran
        inputs = replace(
            inputs,
            draft=inputs.draft or seen.draft,
            target_config=inputs.target_config or seen.target,
            engine=_engine_seen(inputs.engine, seen.engine),
        )
    if inputs.empty:
        inputs = inputs.with_bundled_incident()
    inputs, release = with_release(inputs)
    t0 = time.perf_counter()
    steps, skipped = plan(inputs)
    for step in skipped:  # an earlier run's notebook must not pass for this run's
        (out_dir / f"{step.name}.ipynb").unlink(missing_ok=True)
    results = execute(steps, out_dir, timeout=timeout, workers=workers, progress=progress)
    order = list(TITLES)
    all_steps = sorted([*results, *skipped], key=lambda s: order.index(s.name))
    observed = seen.findings if seen is not None else []
    result = Run(inputs.to_dict(), all_steps, time.perf_counter() - t0, observed)
    result.release = release.to_dict()
    (out_dir / SUMMARY_NAME).write_text(json.dumps(result.to_dict(), indent=2) + "\n")
    (out_dir / "findings.json").write_text(
        json.dumps([f.to_dict() for f in result.findings], indent=2) + "\n"
    )
    postmortem.write(result, out_dir / "postmortem.html")
    return result
