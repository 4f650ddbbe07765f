"""Offline acceptance measured in the installed SGLang, set beside the kit's own measurement.

As `--backend vllm` does for vLLM: the kit's prompts and settings (k, greedy or sampled, each
prompt's stop ids and length limit, raw or chat-rendered ids) run through the real engine, and
its own per-request counters come back beside the kit's rows. SGLang serves from a process tree
of its own (`sglang.launch_server`), so the engine is a server on 127.0.0.1, started from
`python` (this interpreter by default), each prompt one `/generate` request. Its `meta_info`
carries the request's verify steps and its histogram of accepted drafts per step (sglang 0.5.10
managers/tokenizer_manager.py:1913-1943, `spec_verify_ct`, `spec_accept_histogram`; 0.5.12 and
later also as `spec_correct_drafts_histogram`, :2115-2160): exact counts per prompt, so the
engine's figures carry the same bootstrap intervals as the kit's and compare paired.

On a host without CUDA the server runs SGLang's CPU path with the kit's stand-ins
(`kit.engines.sglang.cpu`); on a GPU it runs as shipped. The server's own log (its decode lines,
`accept len: …, accept rate: …`) goes to `engine_log`, for `kit acceptance` and `doctor`. A draft
the engine refuses is a row with the engine's exception, read from that log, not a traceback.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager, suppress
from dataclasses import dataclass, replace
from pathlib import Path

from kit.engines import parse_engine
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
from kit.watch.report import ENV_INTERVAL

INSTALL = (
    "--backend sglang needs SGLang importable in this Python: pip install -r "
    "requirements-sglang.txt (on a GPU machine, the sglang release itself), or run "
    "`make test-engine` once and use .venv-sglang/bin/python"
)
ENGINE_OPTIONS = ("tensor_parallel_size", "engine_dtype", "engine_log")
READY_TIMEOUT_S = 600  # start-up on 2 CPU cores: 15-40 s; a large target on a GPU: minutes
REQUEST_TIMEOUT_S = 600
# sglang 0.5.10 speculative/spec_utils.py:49 TREE_SPEC_KERNEL_AVAILABLE = _is_cuda, and
# eagle_info.py:305-312 verifies greedily without it, whatever the request's temperature
GREEDY_ON_CPU = "0.5.10 speculative/spec_utils.py:49, speculative/eagle_info.py:305-312"


@dataclass(frozen=True)
class EngineSettings:
    """How the server runs: the interpreter that has SGLang, its dtype (float32: the arithmetic
    of the kit's CPU reference, so greedy counts can be equal), GPUs, where its log goes."""

    python: str = sys.executable
    tensor_parallel_size: int = 1
    engine_dtype: str = "float32"
    engine_log: str | Path | None = None
    extra_args: tuple[str, ...] = ()  # more server arguments, as `launch_server` takes them
    radix_cache: bool = False  # the release's default prefix cache (the engine check runs it)
    watch_report: str | Path | None = None  # serve under `kit watch`, its report here

    def __post_init__(self) -> None:
        if self.tensor_parallel_size < 1:
            raise KitError(
                f"tensor_parallel_size must be at least 1, got {self.tensor_parallel_size}"
            )


_PROBE = (
    "import importlib.metadata as m, json\n"
    "try:\n"
    "    v = m.version('sglang')\n"
    "except m.PackageNotFoundError:\n"
    "    v = None\n"
    "cuda = False\n"
    "if v is not None:\n"
    "    import torch\n"
    "    cuda = torch.cuda.is_available()\n"
    "print(json.dumps({'version': v, 'cuda': cuda}))\n"
)


def probe(python: str = sys.executable) -> tuple[str, bool]:
    """(`sglang==X`, whether it has a CUDA device) for the SGLang `python` runs; one line and
    exit 2 when it has none."""
    done = subprocess.run([python, "-c", _PROBE], capture_output=True, text=True, timeout=120)
    found = json.loads(done.stdout) if done.returncode == 0 else {"version": None}
    if found["version"] is None:
        raise KitError(INSTALL if python == sys.executable else f"{python}: no sglang ({INSTALL})")
    from packaging.version import Version

    return f"sglang=={Version(found['version']).base_version}", bool(found["cuda"])


def installed_release(python: str = sys.executable) -> str:
    """`sglang==X` for the SGLang `python` imports."""
    return probe(python)[0]


def server_command(
    target_dir: str | Path, draft_dir: str | Path, k: int, seed: int, ports: tuple[int, int],
    settings: EngineSettings, cpu: bool,
) -> list[str]:  # fmt: skip
    """`python -m sglang.launch_server …` serving `draft_dir` as an EAGLE-3 chain of `k`, on
    `ports` (HTTP, then NCCL: each server started by the kit gets its own)."""
    from kit.engines.sglang.cpu import SERVER_ARGS

    cmd = [
        settings.python, "-m", "sglang.launch_server", "--model-path", str(target_dir),
        "--speculative-draft-model-path", str(draft_dir), "--speculative-algorithm", "EAGLE3",
        "--speculative-num-steps", str(k), "--speculative-eagle-topk", "1",
        "--speculative-num-draft-tokens", str(k + 1), "--dtype", settings.engine_dtype,
        "--tp-size", str(settings.tensor_parallel_size), "--random-seed", str(seed),
        "--host", "127.0.0.1", "--port", str(ports[0]), "--nccl-port", str(ports[1]),
        "--skip-server-warmup",
    ]  # fmt: skip
    if not settings.radix_cache:
        cmd.append("--disable-radix-cache")  # every prompt computed in full, as the kit does
    if cpu:  # a small KV pool and batch on a CPU host; the default sizes the pool from what the
        # host's RAM had free before and after the weights loaded, which another process that
        # allocates in between turns negative ("Not enough memory")
        cmd += [*SERVER_ARGS, "--mem-fraction-static", "0.5", "--max-total-tokens", "16384",
                "--max-running-requests", "8"]  # fmt: skip
    cmd += list(settings.extra_args)
    if settings.watch_report is not None:
        cmd = [settings.python, "-m", "kit", "watch", "--report", str(settings.watch_report),
               "--", *cmd]  # fmt: skip
    return cmd


class Engine:
    """One running SGLang server with the draft; `run_prompts` sends the kit's prompts."""

    def __init__(self, url: str, release: str, k: int, cpu: bool, log: Path) -> None:
        self.url, self.release, self.k, self.cpu, self.log = url, release, k, cpu, log
        self.outputs: list[list[int]] = []  # each prompt's emitted ids, from the last run

    def generate(self, prompt: Prompt, opts: Options) -> dict:
        sampling = {
            "temperature": opts.temperature,
            "top_p": opts.top_p,
            "max_new_tokens": opts.max_new_tokens,
            "stop_token_ids": list(prompt.stop_ids),
        }
        if opts.temperature > 0:
            sampling["sampling_seed"] = opts.seed
        body = {"input_ids": list(prompt.ids), "sampling_params": sampling}
        return _post(f"{self.url}/generate", body)

    def run_prompts(self, prompts: list[Prompt], opts: Options) -> list[Counts]:
        """Every prompt its own request, several in flight (the server batches them), each
        prompt's counts from its own `meta_info`, as this release's scheduler counts them."""
        with ThreadPoolExecutor(max_workers=8) as pool:
            answers = list(pool.map(lambda p: self.generate(p, opts), prompts))
        self.outputs = [list(a.get("output_ids", [])) for a in answers]
        for n, (prompt, answer) in enumerate(zip(prompts, answers, strict=True), 1):
            _check_stop(n, prompt, answer["meta_info"])
        past_stop = stop_counting(self.release)[1].value
        return [_counts(a["meta_info"], self.k, past_stop) for a in answers]


def _check_stop(n: int, prompt: Prompt, meta: dict) -> None:
    """SGLang also stops at the target's end-of-sequence tokens (0.5.10 managers/schedule_batch.py
    :1090-1111; `ignore_eos` would drop the prompt's stop ids too), where the kit's completion
    runs on to the prompt's stop ids or its length limit: counts not to compare."""
    reason = meta.get("finish_reason") or {}
    matched = reason.get("matched")
    if reason.get("type") == "stop" and isinstance(matched, int) and matched not in prompt.stop_ids:
        raise KitError(
            f"prompt {n}: SGLang stopped at token {matched}, the target's end of sequence, which "
            "the kit's completion runs past: add it to the prompt's stop_ids"
        )


def _post(url: str, body: dict) -> dict:
    request = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=REQUEST_TIMEOUT_S) as r:
        return json.loads(r.read())


def _counts(meta: dict, k: int, past_stop: bool) -> Counts:
    """One request's counts from its own `meta_info`: verify steps, and its histogram of
    accepted drafts per step (`histogram[j]`: steps that accepted j drafts), which must add up
    to its own totals.

    The per-request counter counts every draft the final step accepted, past the request's last
    token too (0.5.10 speculative/eagle_info.py:430-433 reads the accept indices copied at :392,
    before :409 cuts them at the stop). Where the release's scheduler does not (`past_stop`
    False: its `accept len` counts what the request emitted, :435-436), the accepted drafts are
    what it emitted less one token per step; the per-position figures stay the histogram's."""
    steps = int(meta.get("spec_verify_ct", 0))
    hist = meta.get("spec_correct_drafts_histogram") or meta.get("spec_accept_histogram") or []
    hist = [int(h) for h in hist] or [steps]  # no histogram: no step, or none accepted
    counted = sum(j * n for j, n in enumerate(hist))
    said = next(
        (meta[name] for name in ACCEPTED_KEYS if name in meta), counted if not steps else None
    )
    emitted = max(0, int(meta.get("completion_tokens", 0)) - 1)  # the prefill emits the first
    accepted = counted if past_stop else emitted - steps
    if sum(hist) != steps or said is None or int(said) != counted or not 0 <= accepted <= counted:
        raise KitError(
            f"SGLang's per-request counters disagree with each other (verify steps {steps}, "
            f"histogram {hist}, accepted {said}, {emitted + 1} tokens): not figures to compare"
        )
    per_position = [sum(hist[j] for j in range(i + 1, len(hist))) for i in range(k)]
    return Counts(steps, accepted, emitted, per_position)


# the request's accepted drafts, by release: 0.5.10 tokenizer_manager.py:1931; 0.5.12 :2135,2141
ACCEPTED_KEYS = ("spec_num_correct_drafts", "spec_accepted_drafts", "spec_accept_token_num")


@contextmanager
def start(
    target_dir: str | Path, draft_dir: str | Path, k: int, seed: int, settings: EngineSettings
) -> Iterator[Engine]:
    """The server on 127.0.0.1 serving `target_dir` with `draft_dir` at chain length `k`, on the
    GPU when it has one, else on the CPU with the kit's stand-ins; `EngineCrash` when it does
    not start. Stopped (its whole process group) on the way out."""
    release, cuda = probe(settings.python)
    ports = (_free_port(), _free_port())  # HTTP, NCCL
    cmd = server_command(target_dir, draft_dir, k, seed, ports, settings, cpu=not cuda)
    log = Path(settings.engine_log or tempfile.mkstemp(prefix="sglang-", suffix=".log")[1])
    env = _environment(cuda)
    if settings.watch_report is not None:
        env.setdefault(ENV_INTERVAL, "0.5")
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, process_group=0)
    try:
        url = f"http://127.0.0.1:{ports[0]}"
        _wait_ready(proc, url, log)
        yield Engine(url, release, k, not cuda, log)
        if settings.watch_report is not None:  # its last counts into the report, then stop
            time.sleep(2 * float(env[ENV_INTERVAL]) + 0.5)
    finally:
        stop(proc)


def _environment(cuda: bool) -> dict[str, str]:
    from kit.engines.sglang.cpu import launch_env

    env = dict(os.environ)
    if not cuda:
        env = launch_env(env)
        env.setdefault("OMP_NUM_THREADS", "1")  # as the kit measures: one thread, figures repeat
    return env


_PORT_LOCK, _HANDED_OUT, _RANDOM = threading.Lock(), set(), random.Random()


def _free_port() -> int:
    """A free port below the kernel's ephemeral range, never handed out twice in this process.

    The server binds it only later, so a port from the ephemeral range can meanwhile go to
    another socket: SGLang up to 0.5.12 takes its own NCCL port from bind(0) (0.5.10
    srt/utils/network.py:170 `get_free_port`) and two servers started side by side then collide;
    0.5.23 picks below that range for this reason (network.py:205
    `get_free_port_below_ephemeral`). Where that range starts too low to leave room, the ports
    come from 20000-31999 all the same. Under 32000, `--port` + 10000 (0.5.12
    server_args.py:1147-1155 refuses a gRPC port past 65535) is always room."""
    high = min(32000, _ephemeral_low())
    candidates = range(20000, high if high - 20000 >= 1000 else 32000)
    with _PORT_LOCK:
        for port in _RANDOM.sample(candidates, 200):
            if port not in _HANDED_OUT and _bindable(port):
                _HANDED_OUT.add(port)
                return port
    raise KitError(f"no free port in {candidates.start}-{candidates.stop - 1} on this host")


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default


def _bindable(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("0.0.0.0", port))  # the wildcard: torch's TCP store binds every address
        except OSError:
            return False
    return True


def _wait_ready(proc: subprocess.Popen, url: str, log: Path) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise startup_crash(log)
        try:
            with urllib.request.urlopen(f"{url}/health", timeout=5) as r:
                if r.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.5)
    raise KitError(f"SGLang did not answer on {url} within {READY_TIMEOUT_S} s", log)


def stop(proc: subprocess.Popen) -> None:
    """The server and every process it started (those `kit watch` started in a group of their
    own among them)."""
    family = _descendants(proc.pid)
    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        if proc.poll() is not None:
            break
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(wait)
        except subprocess.TimeoutExpired:
            continue
    for pid in family | _descendants(proc.pid):
        with suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)


def _descendants(pid: int) -> set[int]:
    """Every live process below `pid` (from /proc; empty where there is none)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with suppress(OSError, ValueError, IndexError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


EXCEPTION_LINE = re.compile(r"^(?:\[[^\]]*\] )?([A-Za-z_][\w.]*(?:Error|Exception)): (.*)$")
SCHEDULER_FAILED = "hit an exception"  # 0.5.10 managers/scheduler.py:3620


def startup_crash(log: Path) -> EngineCrash:
    """The exception that stopped SGLang, from its log: the scheduler's when it reports one,
    else the launcher's own (the last one its log shows). Connection errors of threads that
    poll a server not up yet are symptoms, never the cause."""
    text = log.read_text(errors="replace") if log.exists() else ""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if SCHEDULER_FAILED in line), None)
    found = [
        m for line in (lines[start:] if start is not None else lines)
        if (m := EXCEPTION_LINE.match(line.strip())) and not _symptom(m.group(1))
    ]  # fmt: skip
    if found:
        m = found[0] if start is not None else found[-1]
        return EngineCrash(m.group(1).rsplit(".", 1)[-1], m.group(2).strip())
    last = [line.strip() for line in lines if line.strip()][-3:]  # what it said last, if anything
    said = f"; it said last: {' | '.join(last)}" if last else ""
    return EngineCrash("EngineExit", f"the server exited before it was ready (log: {log}){said}")


def _symptom(kind: str) -> bool:
    return "Connection" in kind or kind.endswith(("MaxRetryError", "NewConnectionError"))


def measure(engine: Engine, target_dir: str | Path, prompts, wiring, **options) -> OfflineResult:
    """The kit's prompts under `options` (as `Options`) in the running server, counted by it."""
    opts = Options(**options)
    if opts.k != engine.k:
        raise KitError(f"the engine drafts k={engine.k}, the measurement asks k={opts.k}")
    sent, key = sent_prompts(Path(target_dir), prompts, opts)
    counter, rule = stop_counting(opts.count_as or engine.release)
    t0 = time.perf_counter()
    per_prompt = engine.run_prompts(sent, opts)
    device = f"SGLang {engine.release}, {'CPU with the kit stand-ins' if engine.cpu else 'GPU'}"
    settings = replace(_settings(opts, counter, rule), device=device)
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
    """The draft measured in SGLang (one server start), labelled by the release; a start-up
    failure is the row's crash, with SGLang's exception."""
    opts = Options(**options)
    release, cuda = probe(settings.python)
    label = f"measured in {release}"
    try:
        with start(target_dir, draft_dir, opts.k, opts.seed, settings) as engine:
            result = measure(engine, target_dir, prompts, predicted.wiring, **options)
    except EngineCrash as e:
        crash = crash_finding(release, e)
        return OfflineRow(label, predicted.wiring, crash=crash, findings=[crash])
    greedy = greedy_on_cpu_finding(release, opts.temperature) if not cuda else None
    findings = [verdict(result)] + ([greedy] if greedy else [])
    return OfflineRow(label, result.wiring, result, findings=findings)


def greedy_on_cpu_finding(release: str, temperature: float) -> Finding | None:
    """Without CUDA SGLang verifies greedily whatever the temperature: a sampled measurement
    there is a greedy one, not a figure to hold against the kit's sampled prediction."""
    if temperature == 0:
        return None
    return Finding(
        code=CPU_SAMPLING_UNRELIABLE,
        severity=Severity.ERROR,
        title=f"{release} verifies greedily on a host without CUDA, whatever the temperature",
        evidence=(
            "its tree-sampling kernel exists for CUDA only, and verification falls back to "
            f"greedy without it: the figure measured at temperature {temperature:g} is greedy",
        ),
        fix="measure sampled acceptance on a GPU, or greedy on the CPU",
        engine=release,
        source=GREEDY_ON_CPU,
    )


def rows_in_sglang(
    target_dir: str | Path,
    draft_dir: str | Path,
    engine: str | None = None,
    *,
    aux_capture: bool | None = None,
    target_class: str | None = None,
    **options,
) -> list[OfflineRow]:
    """Healthy (the kit), as the installed SGLang deploys the draft (the kit's prediction), the
    same after `kit fix` when the fix changes anything, and what that SGLang measures of the
    draft as given, judged against healthy; the last row's first finding says whether the
    engine and the prediction agree. `options`: `Options`' and `EngineSettings`' fields."""
    settings = EngineSettings(**{k: options.pop(k) for k in ENGINE_OPTIONS if k in options})
    release = installed_release(settings.python)
    if engine is not None and parse_engine(engine) != parse_engine(release):
        raise KitError(
            f"--backend sglang measures the installed {release}; --engine names {engine}"
        )
    return engine_rows(
        target_dir, draft_dir, release, lambda predicted, prompts, opts: measured_row(
            target_dir, draft_dir, predicted, settings, prompts, **opts),
        aux_capture=aux_capture, target_class=target_class, options=options,
    )  # fmt: skip
