"""vLLM in the engine check: a launch line turned into `vllm.LLM` arguments for the bundled pair.

The line is read under the installed release (`read_served`): every flag `engine/arg_utils.py`
defines is an `EngineArgs` field, which `vllm.LLM` takes as a keyword argument of the same name
(0.32.0 entrypoints/llm.py, `LLM.__init__(**kwargs)` -> `EngineArgs`), so such a flag is applied
as given unless it names the user's model or a layout the pair does not have. Flags the OpenAI
server defines (`entrypoints/openai/cli_args.py`) never reach the engine and are dropped. Where
the line is silent the engine's own default runs, as `vllm serve` would run it: prefix caching
on, compiled (CUDA graphs on a GPU).
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
from kit.engines import EngineRelease
from kit.engines.vllm.flags import SPEC_LEGACY, SPEC_SHORTHANDS

ENGINE_ARGS_FILE = "engine/arg_utils.py"  # where a flag the engine itself takes is defined
ONE_DEVICE = "the bundled pair runs on one device: a parallel layout is not run"
REPLACED = {
    "model": "the bundled target is served instead",
    "model_tag": "the bundled target is served instead",
    "tokenizer": "the bundled target's own tokenizer",
    "served_model_name": "the bundled target is served instead",
    "revision": "names a revision of the user's model",
    "code_revision": "names a revision of the user's model",
    "tokenizer_revision": "names a revision of the user's tokenizer",
    "hf_config_path": "names the user's model config",
    "hf_overrides": "overrides the user's model config",
    "download_dir": "the bundled pair is on disk",
    "load_format": "the bundled pair is safetensors",
    "quantization": "the bundled pair is not quantized",
    "trust_remote_code": "the bundled pair has no remote code",
    "tokenizer_mode": "the bundled target's own tokenizer",
    "max_model_len": "sized for the user's model: the pair runs at its own context",
    "disable_log_stats": "the check reads the engine's spec-decode counters",
    "tensor_parallel_size": ONE_DEVICE,
    "pipeline_parallel_size": ONE_DEVICE,
    "data_parallel_size": ONE_DEVICE,
    "data_parallel_size_local": ONE_DEVICE,
    "distributed_executor_backend": ONE_DEVICE,
}
CPU_ONLY_BACKEND = "the CPU build has one attention backend"
NO_CUDA = {"attention_backend": CPU_ONLY_BACKEND, "attention_config": CPU_ONLY_BACKEND}
SPEC_DROPPED = {
    "model": "the bundled draft is served instead",
    "method": "the check runs eagle3 with the bundled EAGLE-3 draft",
    "quantization": "the bundled draft is not quantized",
    "draft_tensor_parallel_size": ONE_DEVICE,
    "max_model_len": "sized for the user's model: the pair runs at its own context",
}
# Speculative-config keys the kit's prediction does not model, at their defaults (0.32.0
# config/speculative.py:478,529,600): another value is dropped, so the figures compare, and named,
# since the server runs it.
NOT_MODELLED = {
    "draft_sample_method": "greedy",
    "rejection_sample_method": "standard",
    "parallel_drafting": False,
}
# What the check sets itself, and why (each listed in the report).
CHECK_ARGS = {
    "disable_log_stats": (False, "the engine's spec-decode counters are read"),
    "per_request_spec_decode_metrics": ("summary", "each prompt's own counts come back"),
}
CHECK_ENV = {
    "VLLM_ENABLE_V1_MULTIPROCESSING": (
        "0",
        "the engine core in the check's process: counters read directly, a --setup hook runs "
        "inside it",
    ),
    "VLLM_LOGGING_STREAM": ("ext://sys.stderr", "the engine's log beside the check's output"),
}
CPU_KV = ("VLLM_CPU_KVCACHE_SPACE", "1", "1 GiB of KV cache is ample for the pair on a CPU")
# A launch line's silence means the engine default; `vllm_backend.start`'s own defaults differ.
ENGINE_DEFAULTS = {"enforce_eager": False, "enable_prefix_caching": None}


def plan(
    release: EngineRelease,
    launch: str | Path | None,
    *,
    cuda: bool,
    k: int,
    speculative: dict[str, Any] | None = None,
) -> RunPlan:
    """The run on the pair for `launch` (None: the engine's defaults, float32 so greedy counts
    compare exactly) under `release`, on a host with CUDA or not; `speculative`: a speculative
    config alone (an offline `LLM`'s), its keys read as the line's would be."""
    settings: list[Setting] = []
    args: dict[str, Any] = dict(ENGINE_DEFAULTS)
    env: dict[str, str] = {}
    line_facts: set[str] | None = None
    if speculative is not None:
        k = _speculative(dict(speculative), k, args, settings)
    if launch is None:
        args["dtype"] = "float32"
        settings.append(
            Setting(
                "dtype",
                "float32",
                Status.CHECK,
                "no launch line: the kit's arithmetic, so greedy counts compare exactly",
            )
        )
    else:
        k, line_facts = _read_line(release, launch, cuda, k, args, env, settings)
    for name, (value, why) in CHECK_ARGS.items():
        args[name] = value
        settings.append(Setting(name, value, Status.CHECK, why))
    for name, (value, why) in CHECK_ENV.items():
        env[name] = value
        settings.append(Setting(name, value, Status.CHECK, why, f"env:{name}"))
    if not cuda and CPU_KV[0] not in env:
        env[CPU_KV[0]] = CPU_KV[1]
        settings.append(Setting(CPU_KV[0], CPU_KV[1], Status.CHECK, CPU_KV[2], f"env:{CPU_KV[0]}"))
    p = with_facts(
        RunPlan("vllm", release, k, args, env, tuple(settings), launch=launch_text(launch)), cuda
    )
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
    facts of the line as the user serves it (on a GPU, every flag kept)."""
    from kit.deployment.lines import read_served

    served = read_served(launch, str(release))
    given = served.arguments
    line_facts = set(served.facts)
    if not given.value("enforce_eager"):
        line_facts.add("cuda_graph")
    if given.value("async_scheduling"):
        line_facts.add("overlap")
    env_settings(served.command.env, "VLLM_", env, settings, "a vLLM")
    for positional in served.arguments.positional:
        settings.append(Setting(positional, None, Status.DROPPED, REPLACED["model_tag"]))
    spec: dict[str, Any] = {}
    for dest, given in served.arguments.given.items():
        if dest == "speculative_config" or dest in SPEC_SHORTHANDS or dest in SPEC_LEGACY:
            spec.update(_spec_keys(dest, given.value))
            continue
        why = _dropped(dest, given.value, given.flag.source, cuda)
        if why:
            shown = "…" if any(w in dest for w in SECRET_WORDS) else given.value
            settings.append(Setting(given.spelled, shown, Status.DROPPED, why))
        else:
            args[dest] = given.value
            settings.append(Setting(given.spelled, given.value, Status.APPLIED, key=dest))
    for issue in served.arguments.issues:
        settings.append(Setting(issue.spelled, None, Status.DROPPED, f"{issue.problem.value} in "
                                f"{release}: {issue.detail}"))  # fmt: skip
    return _speculative(spec, k, args, settings), line_facts


def _spec_keys(dest: str, value: Any) -> dict[str, Any]:
    if dest == "speculative_config":
        return dict(value) if isinstance(value, dict) else {}
    return {{**SPEC_SHORTHANDS, **SPEC_LEGACY}[dest]: value}


def _speculative(spec: dict[str, Any], k: int, args: dict[str, Any], settings: list) -> int:
    """The speculative config's keys: the chain length is the run's k, the draft and method are
    the pair's, the rest go to the engine as given."""
    kept: dict[str, Any] = {}
    for key, value in spec.items():
        name = f"speculative_config.{key}"
        if key == "num_speculative_tokens" and isinstance(value, int) and value >= 1:
            k = value
            settings.append(Setting(name, value, Status.APPLIED, "the chain length, both sides"))
        elif key == "method" and str(value).lower() == "eagle3":
            settings.append(Setting(name, value, Status.APPLIED))
        elif key in SPEC_DROPPED and not (key == "draft_tensor_parallel_size" and value == 1):
            settings.append(Setting(name, value, Status.DROPPED, SPEC_DROPPED[key]))
        elif key in NOT_MODELLED and value != NOT_MODELLED[key]:
            why = f"the kit's prediction does not model it: the run keeps {NOT_MODELLED[key]!r}"
            settings.append(Setting(name, value, Status.DROPPED, why))
        else:
            kept[key] = value
            settings.append(Setting(name, value, Status.APPLIED, key=name))
    if kept:
        args["speculative_config"] = kept
    return k


def _dropped(dest: str, value: Any, source: str, cuda: bool) -> str:
    """Why a flag of the line is not run on the pair ("" when it is)."""
    if ENGINE_ARGS_FILE not in source:
        return "a server option: it never reaches the engine"
    if dest in REPLACED:
        parallel = REPLACED[dest] == ONE_DEVICE
        return "" if parallel and value in (1, None, "mp", "uni") else REPLACED[dest]
    if not cuda and dest in NO_CUDA:
        return NO_CUDA[dest]
    return ""


def with_facts(p: RunPlan, cuda: bool) -> RunPlan:
    """The plan with the facts known defects are matched on, read from what it runs."""
    args, env = p.engine_args, p.env
    facts = {"speculating", "eagle3", "eagle_family"}
    if args.get("enable_prefix_caching") is not False:
        facts.add("prefix_caching")  # on unless switched off (kit.engines.vllm.serving)
    if env.get("VLLM_USE_V2_MODEL_RUNNER") in ("1", "true", "True"):
        facts.add("model_runner_v2")
    if cuda and not args.get("enforce_eager"):
        facts.add("cuda_graph")
    if args.get("async_scheduling"):
        facts.add("overlap")
    return replace(p, facts=frozenset(facts))


# Engine defaults a known defect depends on, and the value that turns each off: a bisect tries
# them even when the line is silent (the fact, the argument, its value off, the flag to write).
DEFAULT_ON = (
    ("prefix_caching", "enable_prefix_caching", False, "--no-enable-prefix-caching"),
    ("cuda_graph", "enforce_eager", True, "--enforce-eager"),
    ("overlap", "async_scheduling", False, "--no-async-scheduling"),
)


def bisect_steps(p: RunPlan, cuda: bool) -> list[tuple[str, RunPlan]]:
    """One rerun per setting that can change drafting: each applied flag of the line back at
    the engine's default (a default-on feature the line switches on explicitly: off), and each
    default a known defect depends on switched off."""
    off = {key: (value, flag) for _, key, value, flag in DEFAULT_ON}
    steps: list[tuple[str, RunPlan]] = []
    for s in p.applied:
        if s.key is None or s.name == "speculative_config.num_speculative_tokens":
            continue
        if s.key in off and s.value != off[s.key][0]:
            value, label = off[s.key][0], f"with {off[s.key][1]}"
        else:
            value = None if s.key.startswith("env:") else ENGINE_DEFAULTS.get(s.key)
            label = f"without {s.name}"
        steps.append((label, with_facts(p.with_value(s.key, value), cuda)))
    for fact, key, value, flag in DEFAULT_ON:
        given = any(s.key == key for s in p.applied)
        if fact in p.facts and not given:
            steps.append((f"with {flag}", with_facts(p.with_value(key, value), cuda)))
    return steps


def counting(release: EngineRelease) -> str:
    """The release whose stop counting the kit's prediction follows: the installed one (its
    per-request histogram counts as its counters do)."""
    return str(release)


def sampling(launch: str | Path | None, release: EngineRelease) -> dict[str, float]:
    """The sampled run's temperature and top-p from the line's `--override-generation-config`
    (the server's default sampling), when it sets them."""
    if launch is None:
        return {}
    from kit.deployment.lines import read_served

    given = read_served(launch, str(release)).arguments.value("override_generation_config")
    if not isinstance(given, dict):
        return {}
    out = {}
    for key in ("temperature", "top_p"):
        if isinstance(given.get(key), (int, float)) and not isinstance(given.get(key), bool):
            out[key] = float(given[key])
    return out
