"""SGLang JSON: `/get_server_info` (server args + `internal_states[].avg_spec_accept_length`)
and per-request `meta_info` (`/generate` responses, one object, a list, or JSON lines).

Sources: 0.5.10 `entrypoints/http_server.py:601-618` (server_info = server args + scheduler info +
internal_states + version); `avg_spec_accept_length` = accepted tokens / verify steps summed since
the server started (0.5.10 `managers/scheduler.py:3081-3084`): a lifetime figure, not the present
one. The meta rate is accepted drafts / (verify_ct · (D − 1)) from 0.5.6 (0.5.10
`managers/tokenizer_manager.py:1919-1932`) and `spec_accept_histogram[i]` counts verify steps that
accepted i drafts (`:1936-1943`).
"""

from __future__ import annotations

from typing import Any

from kit.acceptance.fields import count, number
from kit.acceptance.model import Kind, LogRun, Window
from kit.engines.sglang.acceptance import META_KEYS

# The server arguments that decide what speculation runs (0.5.10 server_args.py:371-631).
SERVER_ARGS = (
    "model_path",
    "speculative_algorithm",
    "speculative_draft_model_path",
    "speculative_num_steps",
    "speculative_eagle_topk",
    "speculative_num_draft_tokens",
    "speculative_accept_threshold_single",
    "speculative_accept_threshold_acc",
    "tp_size",
    "dp_size",
    "enable_dp_attention",
    "disable_cuda_graph",
    "disable_overlap_schedule",
    "dtype",
)


def read(obj: Any, run: LogRun, line_no: int = 0) -> bool:
    """Fold a decoded JSON value into `run`; False when it is neither shape."""
    if isinstance(obj, list):
        return any([read(o, run, line_no) for o in obj])
    if not isinstance(obj, dict):
        return False
    if "internal_states" in obj or "speculative_num_steps" in obj:
        _server_info(obj, run)
        return True
    meta = obj.get("meta_info", obj if "spec_verify_ct" in obj else None)
    if isinstance(meta, dict) and "spec_verify_ct" in meta:
        _meta_info(meta, run, line_no)
        return True
    return False


def _server_info(info: dict[str, Any], run: LogRun) -> None:
    run.engine_name = "sglang"
    # each figure read as the number it must be: server info is input, `"5"` or 1e999 too
    run.num_steps = run.num_steps or count(info.get("speculative_num_steps"))
    run.topk = run.topk or count(info.get("speculative_eagle_topk"))
    run.num_draft_tokens = run.num_draft_tokens or count(info.get("speculative_num_draft_tokens"))
    if isinstance(info.get("version"), str):
        run.facts["server_version"] = info["version"]
    run.facts["server_args"] = {k: info[k] for k in SERVER_ARGS if k in info}
    states = info.get("internal_states")
    for state in states if isinstance(states, list) else []:
        al = number(state.get("avg_spec_accept_length")) if isinstance(state, dict) else None
        if al is not None:
            run.formats[("sglang", "server_info")] += 1
            run.add(Window(accept_len=al, kind=Kind.SERVER_INFO))


def _meta_info(meta: dict[str, Any], run: LogRun, line_no: int) -> None:
    run.engine_name = "sglang"
    verify = count(meta.get("spec_verify_ct")) or 0
    al = number(meta.get("spec_accept_length"))
    completion = count(meta.get("completion_tokens"))
    if al is None and verify and completion is not None:
        al = completion / verify
    accepted = _first(
        meta, "spec_accept_token_num", "spec_accepted_drafts", "spec_num_correct_drafts"
    )
    drafted = _first(
        meta, "spec_draft_token_num", "spec_proposed_drafts", "spec_num_proposed_drafts"
    )
    hist = meta.get("spec_accept_histogram") or meta.get("spec_correct_drafts_histogram")
    per_position = None
    counts = [count(h) for h in hist] if isinstance(hist, list) else []
    if counts and None not in counts and sum(counts) > 0:
        hist, total = counts, sum(counts)
        per_position = tuple(sum(hist[i + 1 :]) / total for i in range(len(hist) - 1))
    keys = tuple(sorted(k for k in META_KEYS if k in meta))
    run.formats[("sglang", "meta_info", keys)] += 1
    run.add(
        Window(
            accept_len=al,
            accept_rate=number(meta.get("spec_accept_rate")),
            per_position=per_position,
            accepted=accepted,
            drafted=drafted,
            line_no=line_no,
            kind=Kind.META_INFO,
        )
    )


def _first(d: dict[str, Any], *keys: str) -> int | None:
    for k in keys:
        if d.get(k) is not None:
            return count(d[k])
    return None
