"""Each engine's launch flags turned into `Served` settings (one reader per engine).

SGLang names the speculation with `--speculative-algorithm` and three counts; vLLM with a JSON
`--speculative-config` (or `--spec-*` shorthands, or before 0.8.3 `--speculative-model` and
`--num-speculative-tokens`), and from 0.11.0 serves a speculators checkpoint given as the model.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from kit.deployment.arguments import Arguments, parse_arguments
from kit.deployment.launch import Command, read_launch
from kit.deployment.served import Served, local_config
from kit.engines import ENGINES, EngineRelease, all_releases, parse_engine, pick
from kit.engines.serving import Method
from kit.engines.sglang import flags as sglang_flags
from kit.engines.sglang import serving as sglang
from kit.engines.vllm import flags as vllm_flags
from kit.engines.vllm import serving as vllm
from kit.errors import KitError

_TRUE = {"1", "true", "True", "yes"}


def _default(s: Served, spelling: str) -> Any:
    table = sglang_flags.table() if s.engine == "sglang" else vllm_flags.table()
    flag = table.flags_at(s.release).get(spelling)
    return flag.default if flag else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def read_sglang(s: Served) -> None:
    """--speculative-algorithm and the three counts (the release's defaults where not given),
    and the facts SGLang's known issues depend on (DP attention, spec v2, overlap, graphs)."""
    a = s.arguments
    algo = a.value("speculative_algorithm")
    if algo:
        name = str(algo)
        if s.release.at_least(sglang.CASE_INSENSITIVE_FROM):
            name = name.upper()
        s.method = sglang.ALGORITHMS.get(name, Method.OTHER)
        s.method_text = str(algo)
        s.method_source = f"{a.given['speculative_algorithm'].spelled} {algo}"
    s.draft = a.value("speculative_draft_model_path")
    s.target = a.value("model_path")
    s.tokenizer = a.value("tokenizer_path")
    s.chat_template = a.value("chat_template")
    for dest, spelling in (
        ("num_steps", "--speculative-num-steps"),
        ("topk", "--speculative-eagle-topk"),
        ("num_draft_tokens", "--speculative-num-draft-tokens"),
    ):
        given = a.value(spelling[2:].replace("-", "_"))
        setattr(s, dest, _int(given if given is not None else _default(s, spelling)))
    if "context_length" in a.given:
        s.context, s.context_flag = a.value("context_length"), a.given["context_length"].spelled
    s.dtype, s.quantization = a.value("dtype"), a.value("quantization")
    s.tensor_parallel = _int(a.value("tp_size", a.value("tensor_parallel_size"))) or 1
    s.pipeline_parallel = _int(a.value("pp_size", a.value("pipeline_parallel_size"))) or 1
    s.kv_cache_dtype = a.value("kv_cache_dtype")
    s.draft_kv_cache_dtype = a.value("speculative_draft_kv_cache_dtype")
    s.draft_quantization = a.value("speculative_draft_model_quantization")
    v2 = pick(sglang.SPEC_V2, s.release).value
    env = s.command.env.get(v2.env) if v2.env else None
    spec_v2 = (env in _TRUE) if env is not None else v2.default
    s.facts |= _common_facts(s) | {
        name
        for name, on in (
            ("dp_attention", bool(a.value("enable_dp_attention")) or (a.value("attn_dp_size") or 1) > 1),
            ("cuda_graph", not a.value("disable_cuda_graph")),
            ("spec_v2", spec_v2),
            ("overlap", not a.value("disable_overlap_schedule")),
        )
        if on
    }  # fmt: skip


def read_vllm(s: Served) -> None:
    """The speculative config from every spelling a release accepts, the model as positional
    or --model, and the facts vLLM's known issues depend on (prefix caching, model runner V2)."""
    a = s.arguments
    spec = dict(a.value("speculative_config") or {}) if a.value("speculative_config") else {}
    origin = "--speculative-config"
    for dest, key in {**vllm_flags.SPEC_SHORTHANDS, **vllm_flags.SPEC_LEGACY}.items():
        value = a.value(dest, _raw(s, "--" + dest.replace("_", "-")))
        if value is not None:
            spec[key], origin = value, "--" + dest.replace("_", "-")
    s.target = a.positional[0] if a.positional else a.value("model")
    config = local_config(s.target)
    if not spec and config and "speculators_model_type" in config:
        row = pick(vllm.SERVES_SPECULATORS, s.release)
        if row.value:
            spec, origin = _speculators_spec(s.target, config), f"the served model ({row.source})"
            s.target = (
                (config.get("speculators_config") or {}).get("verifier", {}).get("name_or_path")
            )
    if spec:
        _vllm_method(s, spec, origin)
        s.draft = spec.get("model")
        s.num_speculative_tokens = _int(spec.get("num_speculative_tokens"))
        s.spec = spec
        s.draft_kv_cache_dtype = spec.get("kv_cache_dtype")
        s.draft_quantization = spec.get("quantization")
    s.tokenizer, s.chat_template = a.value("tokenizer"), a.value("chat_template")
    if "max_model_len" in a.given:
        s.context, s.context_flag = a.value("max_model_len"), a.given["max_model_len"].spelled
    s.dtype, s.quantization = a.value("dtype"), a.value("quantization")
    s.tensor_parallel = _int(a.value("tensor_parallel_size")) or 1
    s.pipeline_parallel = _int(a.value("pipeline_parallel_size")) or 1
    s.kv_cache_dtype = a.value("kv_cache_dtype")
    s.facts |= _common_facts(s)
    if a.value("enable_prefix_caching") is not False:
        s.facts.add("prefix_caching")
    if s.command.env.get("VLLM_USE_V2_MODEL_RUNNER") in _TRUE:
        s.facts.add("model_runner_v2")


def _vllm_method(s: Served, spec: dict[str, Any], origin: str) -> None:
    method = spec.get("method")
    if method:
        s.method = vllm.METHODS.get(str(method).lower(), Method.OTHER)
        s.method_text, s.method_source = str(method), f"{origin} method {method}"
        return
    model = str(spec.get("model") or "")
    if model in ("ngram", "[ngram]"):
        s.method, s.method_source = Method.NGRAM, f"{origin} model {model}"
        return
    row = pick(vllm.AUTO_METHOD, s.release)
    s.method = next((m for sub, m in row.value if sub in model.lower()), Method.DRAFT_MODEL)
    s.method_source = f"no method given: picked from the draft path {model!r} ({row.source})"


def _speculators_spec(model: str | None, config: dict[str, Any]) -> dict[str, Any]:
    spec_cfg = config.get("speculators_config") or {}
    methods = spec_cfg.get("proposal_methods") or [{}]
    first = methods[0] if isinstance(methods[0], dict) else {}
    return {
        "method": config.get("speculators_model_type"),
        "model": model,
        "num_speculative_tokens": first.get("speculative_tokens"),
    }


def _raw(s: Served, spelling: str) -> Any:
    """The value after a flag the release does not define (an older release's spelling), so the
    intended speculation is still known; the flag itself is reported as unknown."""
    argv = s.command.argv
    for i, word in enumerate(argv):
        key, eq, inline = word.partition("=")
        if key.replace("_", "-") == spelling:
            text = inline if eq else (argv[i + 1] if i + 1 < len(argv) else None)
            if text is None:
                return None
            return int(text) if text.isdigit() else text
    return None


def _common_facts(s: Served) -> set[str]:
    facts = set()
    if s.method is not None:
        facts.add("speculating")
    if s.method is Method.EAGLE3:
        facts.add("eagle3")
    if s.method in (Method.EAGLE3, Method.EAGLE):
        facts.add("eagle_family")
    return facts


READERS: dict[str, Callable[[Served], None]] = {"sglang": read_sglang, "vllm": read_vllm}


def read_served(launch: str | Path, engine: str | None = None) -> Served:
    """Read a launch line (text or script) under the given or assumed release."""
    command = read_launch(launch)
    name, _, version = (engine or "").partition("==")
    if name and name.strip().lower() != command.engine:
        raise KitError(f"--engine {engine} but the launch line starts {command.entrypoint}")
    pkg = ENGINES[command.engine]
    release = parse_engine(engine or "") if version else None
    try:
        args, fitting = _parse(command, pkg, release)
    except KitError as e:  # a JSON flag that does not parse: name where the line came from
        raise KitError(e.problem, e.path or command.source) from None
    served = Served(command, args, args.release, release is not None, fitting)
    READERS[command.engine](served)
    return served


def _parse(
    command: Command, pkg: ModuleType, release: EngineRelease | None
) -> tuple[Arguments, tuple[str, ...]]:
    """The arguments under `release`, or under the newest release that accepts the whole line;
    and the releases that accept it."""
    table = pkg.flags.table()
    releases = [release] if release else all_releases(command.engine)
    parsed = [
        parse_arguments(command.argv, table, pick(pkg.flags.PARSER, r).value, r) for r in releases
    ]
    fitting = tuple(str(a.release.version) for a in parsed if not a.issues)
    return next((a for a in reversed(parsed) if not a.issues), parsed[-1]), fitting
