"""SGLang in the engine check: a launch line turned into server arguments for the bundled pair.

The line is read under the installed release (`read_served`). SGLang's server is its engine:
every flag it defines is a `ServerArgs` field (`srt/server_args.py`), so a flag is applied as
given, passed on to `sglang.launch_server` after the ones `offline --backend sglang` sets
(argparse keeps the last value), unless it names the user's model, a device layout the one-device
pair does not have, or, on a host without CUDA, a CUDA-only path the CPU stand-ins replace
(`kit.engines.sglang.cpu.SERVER_ARGS`). The chain is a topk-1 chain of `--speculative-num-steps`
drafts; where the line is silent the release's defaults run (radix cache, overlap scheduling,
CUDA graphs on a GPU).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from kit.engine_check.plan import (
    SECRET_WORDS,
    RunPlan,
    Setting,
    Status,
    env_settings,
    launch_text,
)
from kit.engines import EngineRelease, pick
from kit.engines.sglang.serving import SPEC_V2

ONE_DEVICE = "the bundled pair runs on one device: a parallel layout is not run"
ONE_SERVER = "the bundled pair runs in one server: a prefill/decode split is not run"
CPU_PATH = "no CUDA on this host: the CPU path runs torch_native attention, pytorch sampling and no CUDA graphs"
REPLACED = {
    "model_path": "the bundled target is served instead",
    "tokenizer_path": "the bundled target's own tokenizer",
    "speculative_draft_model_path": "the bundled draft is served instead",
    "speculative_draft_model_revision": "names a revision of the user's draft",
    "revision": "names a revision of the user's model",
    "served_model_name": "the bundled target is served instead",
    "host": "the check serves on 127.0.0.1",
    "port": "the check picks a free port",
    "quantization": "the bundled pair is not quantized",
    "context_length": "sized for the user's model: the pair runs at its own context",
    "trust_remote_code": "the bundled pair has no remote code",
    "tensor_parallel_size": ONE_DEVICE,
    "data_parallel_size": ONE_DEVICE,
    "pipeline_parallel_size": ONE_DEVICE,
    "enable_dp_attention": ONE_DEVICE,
    "nnodes": ONE_DEVICE,
    "dist_init_addr": ONE_DEVICE,
    "disaggregation_mode": ONE_SERVER,
    "skip_server_warmup": "set by the check",
}
PARALLEL_OK = {
    "tensor_parallel_size": 1,
    "data_parallel_size": 1,
    "pipeline_parallel_size": 1,
    "nnodes": 1,
    "disaggregation_mode": "null",
    "enable_dp_attention": False,
}
# CUDA-only paths the CPU stand-ins replace, dropped on a host without CUDA.
NO_CUDA = {
    "device",
    "attention_backend",
    "sampling_backend",
    "disable_cuda_graph",
    "cuda_graph_max_bs",
    "cuda_graph_bs",
    "enable_torch_compile",
    "mem_fraction_static",
    "max_running_requests",
    "speculative_attention_mode",
}
# How the engine check counts SGLang: every draft the final step accepted, past the request's
# last token too, as the request's own histogram does in every release read (0.5.10
# speculative/eagle_info.py:392 copies the accept indices before :409 cuts them at the stop,
# :430-433 count them) and as the scheduler does from 0.5.11 (`acceptance.STOP_COUNTING`): the
# kit predicts with that release's counting, so both sides count alike at every position.
REQUEST_COUNTING = "sglang==0.5.11"
CPU_STAND_INS = (
    "no CUDA on this host: the kit's stand-ins (kit/engines/sglang/cpu), a small KV pool and batch"
)
SPECULATIVE = (
    "speculative_algorithm",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
)


def plan(
    release: EngineRelease,
    launch: str | Path | None,
    *,
    cuda: bool,
    k: int,
    speculative: dict[str, Any] | None = None,
) -> RunPlan:
    """The server run on the pair for `launch` (None: the release's defaults in float32, so
    greedy counts compare exactly) under `release`, on a host with CUDA or not."""
    settings: list[Setting] = []
    args: dict[str, Any] = {"flags": {}, "radix_cache": True, "dtype": "auto"}
    env: dict[str, str] = {}
    line_facts: set[str] | None = None
    if speculative:
        why = "SGLang takes its speculation as launch flags: give --launch"
        settings.append(Setting("speculative config", None, Status.DROPPED, why))
    if launch is None:
        args["dtype"] = "float32"
        why = "no launch line: the kit's arithmetic, so greedy counts compare exactly"
        settings.append(Setting("--dtype", "float32", Status.CHECK, why))
    else:
        k, line_facts = _read_line(release, launch, cuda, k, args, env, settings)
    chain = f"a topk-1 chain of {k} (--speculative-num-draft-tokens {k + 1})"
    settings.append(Setting("--speculative-num-steps", k, Status.CHECK, chain))
    if not cuda:
        settings.append(Setting("the CPU path", None, Status.CHECK, CPU_STAND_INS))
    run = RunPlan("sglang", release, k, args, env, tuple(settings), launch=launch_text(launch))
    p = with_facts(run, cuda)
    return replace(p, line_facts=frozenset(p.facts if line_facts is None else line_facts))


def _read_line(
    release: EngineRelease,
    launch: str | Path,
    cuda: bool,
    k: int,
    args: dict[str, Any],
    env: dict[str, str],
    settings: list[Setting],
) -> tuple[int, set[str]]:
    """Every flag and variable of the line, applied or dropped; returns the chain length and the
    facts of the line as the user serves it (every flag kept)."""
    from kit.deployment.lines import read_served

    served = read_served(launch, str(release))
    line_facts = set(served.facts)
    given = served.arguments
    if given.value("disaggregation_mode") not in (None, "null"):
        line_facts.add("disaggregation")
    env_settings(served.command.env, "SGLANG_", env, settings, "an SGLang")
    for dest, g in given.given.items():
        if dest in SPECULATIVE:
            k = _speculative(dest, g, k, served, settings)
            continue
        why = _dropped(dest, g.value, cuda)
        shown = "…" if any(w in dest for w in SECRET_WORDS) else g.value
        if why:
            settings.append(Setting(g.spelled, shown, Status.DROPPED, why))
            continue
        if dest == "disable_radix_cache":
            key, args["radix_cache"] = "radix_cache", False
        elif dest == "dtype":
            key, args["dtype"] = "dtype", g.value
        else:
            key = f"flags.{dest}"
            args["flags"][dest] = _argv(g)
        settings.append(Setting(g.spelled, shown, Status.APPLIED, key=key))
    for issue in given.issues:
        settings.append(
            Setting(
                issue.spelled,
                None,
                Status.DROPPED,
                f"{issue.problem.value} in {release}: {issue.detail}",
            )
        )
    return k, line_facts


def _speculative(dest: str, g: Any, k: int, served: Any, settings: list[Setting]) -> int:
    """The speculative flags: EAGLE3 and a topk-1 chain run as given (its steps the chain
    length); another algorithm, a tree, a draft-token count that is not steps + 1 are dropped."""
    value = g.value
    if dest == "speculative_algorithm":
        ok = str(value).upper() == "EAGLE3"
        why = "" if ok else "the check runs EAGLE3 with the bundled EAGLE-3 draft"
        settings.append(Setting(g.spelled, value, Status.APPLIED if ok else Status.DROPPED, why))
        return k
    if dest == "speculative_num_steps" and isinstance(value, int) and value >= 1:
        settings.append(Setting(g.spelled, value, Status.APPLIED, "the chain length, both sides"))
        return value
    if dest == "speculative_eagle_topk" and value == 1:
        settings.append(Setting(g.spelled, value, Status.APPLIED))
        return k
    if (
        dest == "speculative_num_draft_tokens"
        and served.num_steps is not None
        and value == served.num_steps + 1
    ):
        settings.append(Setting(g.spelled, value, Status.APPLIED))
        return k
    why = {
        "speculative_eagle_topk": "the kit predicts chains (topk 1): a tree is not compared",
        "speculative_num_draft_tokens": "with topk 1 the chain verifies steps + 1 tokens",
    }.get(dest, "not a chain length")
    settings.append(Setting(g.spelled, value, Status.DROPPED, why))
    return k


def _dropped(dest: str, value: Any, cuda: bool) -> str:
    if dest in REPLACED and not (dest in PARALLEL_OK and value == PARALLEL_OK[dest]):
        return REPLACED[dest]
    if not cuda and dest in NO_CUDA:
        return CPU_PATH
    if any(w in dest for w in SECRET_WORDS):
        return "a credential: it never reaches the drafting"
    return ""


def _argv(g: Any) -> list[str]:
    """A flag as `launch_server` takes it, from its value as the line gave it."""
    import json

    from kit.engines.flagtable import FlagKind, ValueType

    flag, value = g.flag, g.value
    if flag.kind in (FlagKind.SWITCH, FlagKind.BOOL_OPTIONAL) or value is True:
        return [g.spelled]
    if flag.type is ValueType.JSON:
        return [g.spelled, json.dumps(value)]
    if isinstance(value, list):
        return [g.spelled, *map(str, value)]
    return [g.spelled, str(value)]


def server_args(p: RunPlan) -> list[str]:
    """The line's flags that run, as `launch_server` takes them (after the check's own)."""
    return [word for words in p.engine_args["flags"].values() for word in words]


def with_facts(p: RunPlan, cuda: bool) -> RunPlan:
    """The facts known defects are matched on, read from what the server runs."""
    argv, env = server_args(p), p.env
    facts = {"speculating", "eagle3", "eagle_family"}
    if p.engine_args.get("radix_cache"):
        facts.add("prefix_caching")
    if "--disable-overlap-schedule" not in argv:
        facts.add("overlap")
    if cuda and "--disable-cuda-graph" not in argv:
        facts.add("cuda_graph")
    v2 = pick(SPEC_V2, p.release).value
    switched = env.get(v2.env) if v2.env else None
    if (switched in ("1", "true", "True")) if switched is not None else v2.default:
        facts.add("spec_v2")
    if not cuda:
        facts.add("no_cuda")
    return replace(p, facts=frozenset(facts))


# Release defaults a known defect depends on: the fact, the flag that turns it off.
DEFAULT_ON = (
    ("overlap", "disable_overlap_schedule"),
    ("cuda_graph", "disable_cuda_graph"),
)
# What each applied setting is set back to when a bisect leaves it out (None: removed).
LEFT_OUT = {"dtype": "auto", "radix_cache": True}


def bisect_steps(p: RunPlan, cuda: bool) -> list[tuple[str, RunPlan]]:
    """One rerun per setting that can change drafting: each applied flag of the line left out,
    the radix cache switched off, and each default a known defect depends on switched off."""
    steps = []
    for s in p.applied:
        if s.key is not None:
            left = p.with_value(s.key, LEFT_OUT.get(s.key))
            steps.append((f"without {s.name}", with_facts(left, cuda)))
    if p.engine_args.get("radix_cache"):
        off = p.with_value("radix_cache", False)
        steps.append(("with --disable-radix-cache", with_facts(off, cuda)))
    for fact, dest in DEFAULT_ON:
        if fact in p.facts:
            flag = "--" + dest.replace("_", "-")
            off = p.with_value(f"flags.{dest}", [flag])
            steps.append((f"with {flag}", with_facts(off, cuda)))
    return steps


def counting(release: EngineRelease) -> str:
    """The release whose stop counting the kit's prediction follows (`REQUEST_COUNTING`)."""
    return REQUEST_COUNTING


def sampling(launch: str | Path | None, release: EngineRelease) -> dict[str, float]:
    """SGLang's server default sampling is per request: the line sets none the check reads."""
    return {}
