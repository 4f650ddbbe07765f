"""Offline acceptance of an EAGLE-3 draft against its target, and what each wiring fault costs.

`evaluate(target_dir, draft_dir)` runs what a server does with `topk = 1`: chain drafting of `k`
tokens, greedy verification by the target, `a` = the leading drafted tokens the target agrees
with, `a + 1` tokens emitted per verify step. Greedy verification emits exactly the target's
greedy continuation whatever the draft proposes, so the kit generates that continuation once,
takes the target's hidden states over it in one forward pass, and runs the draft's chains from
every position at once (`kit.draft.ChainCache`): a step that starts at position `p` reads the
chain that starts there. Counts are exact, not sampled.

Faults come from the other analyses, not from a hand-picked list:
  * `as_loaded_by="sglang==0.5.10"`: the draft's weights as that release loads them
    (`kit.loading.simulate_load`: silently dropped tensors stay at the engine's init);
  * `aux_capture=False`, `aux_layers=[…]`: the hidden state that release hands the draft
    (`kit.trace.simulate_capture`: the final post-norm state when capture is off, so SGLang's
    `fc` gate bypasses `fc`; other layers when ids are read in another convention);
  * `use_d2t=False`: draft ids used as target ids (no vocabulary map).

Prompts are bounded line completions (free-running greedy text falls into loops that inflate
acceptance): each completion stops at a stop token or after `max_new_tokens`. Engines count the
verify step that reaches that last token differently (each engine's `acceptance.STOP_COUNTING`), so the figures count it as
one named release does: `as_loaded_by` unless `count_as` says otherwise.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from kit.checkpoint import Checkpoint, open_checkpoint
from kit.config import DraftConfig, TargetConfig, load_draft_config
from kit.config import load_target_config as _load_target_config
from kit.draft import ChainCache, Eagle3Draft, build_draft, load_state
from kit.engines import ENGINES, EngineRelease, parse_engine, pick
from kit.errors import KitError
from kit.findings import Finding, Severity
from kit.inspection import check_pair

HEALTHY_RELEASE = "vllm==0.11.2"  # reads speculators configs, layers.0.* keys and top-level aux ids
# Does the release's accepted-token counter include drafted tokens the target verified past the
# request's last token (its stop token or length limit)? Each release's default worker.
PROGRESS_MIN_GROUPS = 8  # show a progress bar from this many prompt groups on
NEAR_ZERO_ACCEPT_LEN = 1.1


@dataclass
class Prompt:
    ids: list[int]
    stop_ids: list[int] = field(default_factory=list)
    text: str = ""


@dataclass
class OfflineResult:
    """Exact counts of one offline run and the figures each engine would log from them."""

    k: int
    prompts: int
    verify_steps: int
    drafted: int
    accepted: int
    accepted_per_position: list[int]
    emitted: int
    wiring: dict[str, Any]
    findings: list[Finding] = field(default_factory=list)

    @property
    def accept_len(self) -> float:
        """Tokens per verify step, bonus token included (SGLang `accept len`, vLLM mean length)."""
        return 1.0 + self.accepted / self.verify_steps if self.verify_steps else 1.0

    @property
    def per_position(self) -> list[float]:
        """Share of verify steps whose drafted token i was accepted (vLLM per-position rate)."""
        n = max(1, self.verify_steps)
        return [a / n for a in self.accepted_per_position]

    @property
    def step0_accuracy(self) -> float:
        return self.per_position[0] if self.per_position else 0.0

    @property
    def accept_rate(self) -> dict[str, float | None]:
        """The `accept rate` each engine era would print for these counts (topk = 1, D = k+1)."""
        from kit.engines.sglang.acceptance import ACCEPT_RATE

        rates: dict[str, float | None] = {}
        for row in ACCEPT_RATE:
            f = row.value
            rates[f"sglang{row.versions}"] = (
                None if f is None else round(f.rate(self.accept_len, self.k + 1), 6)
            )
        # vLLM V1: accepted / drafted (vllm-eagle3.md §5, v1/spec_decode/metrics.py)
        rates["vllm"] = round(self.accepted / self.drafted, 6) if self.drafted else 0.0
        return rates

    def to_dict(self) -> dict[str, Any]:
        return {
            "k": self.k,
            "prompts": self.prompts,
            "accept_len": round(self.accept_len, 6),
            "accept_rate": self.accept_rate,
            "per_position": [round(p, 6) for p in self.per_position],
            "step0_accuracy": round(self.step0_accuracy, 6),
            "counts": {
                "verify_steps": self.verify_steps,
                "drafted": self.drafted,
                "accepted": self.accepted,
                "accepted_per_position": self.accepted_per_position,
                "emitted": self.emitted,
            },
            "wiring": self.wiring,
            "findings": [f.to_dict() for f in self.findings],
        }


# ---------------------------------------------------------------------------------------------
# Inputs.


def load_prompts(path: str | Path, vocab_size: int | None = None) -> list[Prompt]:
    """A JSONL file of `{"ids": [...], "stop_ids": [...], "text": "..."}` lines; with
    `vocab_size`, every id must be a token of that vocabulary."""
    p = Path(path)
    try:
        lines = p.read_text().splitlines()
    except OSError as e:
        raise KitError(f"cannot read prompts: {e.strerror}", p) from None
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            pr = Prompt([int(i) for i in d["ids"]], [int(i) for i in d.get("stop_ids", [])],
                        str(d.get("text", "")))  # fmt: skip
        except (json.JSONDecodeError, KeyError, TypeError, ValueError):
            raise KitError(f"line {n} is not a prompt object with integer 'ids'", p) from None
        if problem := _prompt_problem(pr, vocab_size):
            raise KitError(f"line {n}: {problem}", p)
        out.append(pr)
    if not out:
        raise KitError("no prompts in file", p)
    return out


def _prompt_problem(pr: Prompt, vocab_size: int | None) -> str | None:
    """Why the target cannot take this prompt (an id it has no embedding row for), or None."""
    if not pr.ids:
        return "a prompt needs at least one token id"
    top = vocab_size if vocab_size is not None else float("inf")
    bad = next((i for i in pr.ids + pr.stop_ids if not 0 <= i < top), None)
    if bad is None:
        return None
    where = f" (0 … {vocab_size - 1})" if vocab_size is not None else ""
    return f"token id {bad} is outside the target's vocabulary{where}"


def _default_prompts(target_dir: Path, vocab_size: int) -> list[Prompt]:
    for candidate in (target_dir / "prompts.jsonl", target_dir.parent / "prompts.jsonl"):
        if candidate.is_file():
            return load_prompts(candidate, vocab_size)
    raise KitError("no prompts given and no prompts.jsonl beside the target", target_dir)


def check_device(device: str) -> None:
    """A device torch can name and this machine has, or one clear error."""
    try:
        kind = torch.device(device).type
    except RuntimeError:
        raise KitError(f"unknown device {device!r}; use cpu or cuda") from None
    if kind == "cuda" and not torch.cuda.is_available():
        raise KitError(f"device {device!r}: this torch build sees no CUDA device; use cpu")


def load_target(target_dir: str | Path, device: str = "cpu"):
    """A transformers causal LM in float32 on CPU (its own dtype on a GPU), in eval mode."""
    from transformers import AutoModelForCausalLM

    check_device(device)
    p = Path(target_dir)
    if not (p / "config.json").is_file():
        raise KitError("not a transformers model folder (no config.json)", p)
    dtype = torch.float32 if device == "cpu" else "auto"
    try:
        model = AutoModelForCausalLM.from_pretrained(p, dtype=dtype)
    except (OSError, ValueError) as e:
        raise KitError(f"cannot load the target: {str(e).splitlines()[0]}", p) from None
    return model.to(device).eval()


# ---------------------------------------------------------------------------------------------
# Wiring: which weights the draft holds and which hidden states it receives.


@dataclass
class Wiring:
    """What reaches the draft: its weights' release, the hidden state and the vocabulary map."""

    release: EngineRelease
    feeds: str  # "aux_concat" | "final_hidden_post_norm"
    layers: list[int]  # state after k layers, when feeds == "aux_concat"
    use_d2t: bool
    findings: list[Finding] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)


def plan_wiring(
    target_cfg: TargetConfig,
    draft_cfg: DraftConfig,
    as_loaded_by: str | None,
    aux_capture: bool,
    aux_layers: list[int] | None,
    use_d2t: bool,
) -> Wiring:
    """Ask the capture simulation what the release hands the draft; `aux_layers` override it."""
    from kit.capture import Feed, simulate_capture

    release = parse_engine(as_loaded_by or HEALTHY_RELEASE)
    cap = simulate_capture(
        target_cfg, draft_cfg, release, aux_capture=None if aux_capture else False
    )
    feeds, layers, findings = cap.feeds, list(cap.captured_layers), list(cap.findings)
    notes = {"trace": {"captured_layers": layers, "feeds": feeds, "fc_applied": cap.fc_applied}}
    if aux_layers is not None:
        feeds, layers = "aux_concat", list(aux_layers)
        n = target_cfg.num_hidden_layers
        if any(not 0 <= i < n for i in layers):
            raise KitError(f"aux layers {layers} outside 0 … {n - 1} for a {n}-layer target")
    if feeds == Feed.CRASH:
        raise KitError(
            f"{release} would not run this draft with this wiring: "
            + (cap.startup_error or "; ".join(f.title for f in findings))
        )
    return Wiring(release, feeds, layers, use_d2t, findings, notes)


def load_draft(
    draft_dir: str | Path, release: EngineRelease, target=None, device: str = "cpu"
) -> tuple[Eagle3Draft, list[Finding]]:
    """The draft as `release` builds and loads it (dropped tensors left at its init). A draft
    that runs at all runs under a config the release reads: a refused config.json is measured
    as the release reads it once rewritten, and the findings say so."""
    from kit.load_findings import served_findings
    from kit.loading import served_config, simulate_load

    cfg = load_draft_config(draft_dir)
    ck: Checkpoint = open_checkpoint(draft_dir)
    report = simulate_load(ck, cfg, release)
    if report.as_served.crashed:
        errors = report.as_served.errors
        first = errors[0] if errors else "start-up error"
        raise KitError(f"{release} does not start with this draft: {first}", Path(draft_dir))
    draft = build_draft(served_config(cfg, release)[0], release.name, release)
    load_state(draft, ck, report, target=target)
    return draft.to(device).eval(), served_findings(report)


# ---------------------------------------------------------------------------------------------
# The measurement.


def _greedy(target, ids: torch.Tensor, new_tokens: int) -> torch.Tensor:
    """The target's greedy continuation (batch of equal-length prompts), `new_tokens` long."""
    out = target.generate(
        input_ids=ids,
        attention_mask=torch.ones_like(ids),
        max_new_tokens=new_tokens,
        min_new_tokens=new_tokens,
        do_sample=False,
        eos_token_id=None,
        pad_token_id=0,
    )
    return out[:, ids.shape[1] :]


def _hidden(target, seq: torch.Tensor, wiring: Wiring) -> torch.Tensor:
    out = target(input_ids=seq, output_hidden_states=True)
    hs = out.hidden_states  # [embeddings, after layer 1, …, final (post-norm in transformers)]
    if wiring.feeds == "final_hidden_post_norm":
        return hs[-1]
    return torch.cat([hs[i] for i in wiring.layers], -1)


def _chains(
    draft: Eagle3Draft, seq: torch.Tensor, hidden: torch.Tensor, k: int
) -> tuple[torch.Tensor, bool]:
    """Drafted target ids `[B, T-1, k]` (row t starts from hidden_t, token_{t+1}), fc ran?"""
    rows = seq.shape[1] - 1
    pos = torch.arange(rows, device=seq.device)
    cache = ChainCache(len(draft.model.decoder_layers()))
    dtype = draft.model.fc.weight.dtype  # a GPU target may run in bf16; the draft runs in fp32
    tokens, h, own, out, fc = seq[:, 1:], hidden[:, :rows].to(dtype), False, [], False
    for j in range(k):
        logits, h = draft(tokens, h, pos + j, cache, own)
        fc = fc or (j == 0 and bool(draft.fc_applied))
        tokens, own = draft.to_target_ids(logits.argmax(-1)), True
        out.append(tokens)
    return torch.stack(out, -1), fc


def _walk(
    drafts: torch.Tensor, seq: torch.Tensor, start: int, end: int, counts, past_stop: bool = False
) -> None:
    """Verify steps of one sequence: the prefill emits seq[start]; steps run until the request
    finishes at seq[end - 1] (its stop token or its length limit).

    The step that reaches that last token emits nothing after it; whether the drafted tokens the
    target also verified past it count as accepted depends on the release (`STOP_COUNTING`
    in the engine's `acceptance` rules):
    `past_stop` counts them, as vLLM's counters do, and needs `k` tokens of `seq` after `end`.
    """
    p = start
    k = drafts.shape[-1]
    while p < end - 1:
        left = end - 1 - p  # tokens this request still emits, its last one included
        truth = seq[p + 1 : p + 1 + (k if past_stop else min(k, left))]
        match = (drafts[p - 1][: len(truth)] == truth).long().cumprod(0)
        a = int(match.sum()) if past_stop else min(int(match.sum()), left - 1)
        counts["steps"] += 1
        counts["accepted"] += a
        for i in range(a):
            counts["pos"][i] += 1
        counts["emitted"] += min(a + 1, left)
        p += a + 1


def evaluate(
    target_dir: str | Path,
    draft_dir: str | Path,
    k: int = 5,
    as_loaded_by: str | None = None,
    aux_capture: bool = True,
    aux_layers: list[int] | None = None,
    use_d2t: bool = True,
    prompts: list[Prompt] | str | Path | None = None,
    device: str = "cpu",
    progress: bool = True,
    max_new_tokens: int = 24,
    target=None,
    threads: int | None = 1,
    count_as: str | None = None,
) -> OfflineResult:
    """Offline acceptance of `draft_dir` on `target_dir`, wired as described (see module doc).

    `count_as` (e.g. "sglang==0.5.10") names the release whose counters the figures reproduce
    (default: `as_loaded_by`, else `HEALTHY_RELEASE`). `threads` pins torch's
    CPU threads for the run (restored after), so figures repeat whatever else shares the
    machine; None leaves torch's setting alone.
    """
    before = torch.get_num_threads()
    if threads is not None:
        torch.set_num_threads(threads)
    try:
        return _evaluate(target_dir, draft_dir, k, as_loaded_by, aux_capture, aux_layers,
                         use_d2t, prompts, device, progress, max_new_tokens, target,
                         count_as)  # fmt: skip
    finally:
        torch.set_num_threads(before)


def _evaluate(target_dir, draft_dir, k, as_loaded_by, aux_capture, aux_layers, use_d2t,
              prompts, device, progress, max_new_tokens, target, count_as) -> OfflineResult:  # fmt: skip
    if k < 1:
        raise KitError(f"k must be at least 1, got {k}")
    if max_new_tokens < 2:
        raise KitError(
            f"max_new_tokens must be at least 2, got {max_new_tokens}: the prefill emits the "
            "first token, verify steps the rest"
        )
    check_device(device)
    counter = parse_engine(count_as or as_loaded_by or HEALTHY_RELEASE)
    counting = pick(ENGINES[counter.name].acceptance.STOP_COUNTING, counter)
    past_stop = counting.value
    target_dir, draft_dir = Path(target_dir), Path(draft_dir)
    target_cfg = _load_target_config(target_dir)
    if prompts is None:
        prompts = _default_prompts(target_dir, target_cfg.vocab_size)
    elif isinstance(prompts, (str, Path)):
        prompts = load_prompts(prompts, target_cfg.vocab_size)
    else:  # objects: files are checked line by line as they load
        for n, pr in enumerate(prompts, 1):
            if problem := _prompt_problem(pr, target_cfg.vocab_size):
                raise KitError(f"prompt {n}: {problem}")
    draft_cfg = load_draft_config(draft_dir)
    wiring = plan_wiring(target_cfg, draft_cfg, as_loaded_by, aux_capture, aux_layers, use_d2t)
    if target is None:
        target = load_target(target_dir, device)
    draft, load_findings = load_draft(draft_dir, wiring.release, target=target, device=device)
    draft.use_d2t = use_d2t

    groups: dict[int, list[Prompt]] = defaultdict(list)
    for pr in prompts:
        groups[len(pr.ids)].append(pr)
    counts = {"steps": 0, "accepted": 0, "emitted": 0, "pos": [0] * k}
    items = sorted(groups.items())
    bar = None
    if progress and len(items) >= PROGRESS_MIN_GROUPS:
        from tqdm.auto import tqdm

        # disable=None: no bar where stderr is not a terminal (CI logs would get \r-joined lines)
        bar = tqdm(total=len(prompts), desc="offline acceptance", unit="prompt", disable=None)
    fc_applied = False
    with torch.inference_mode():
        for length, group in items:
            ids = torch.tensor([g.ids for g in group], device=device)
            cont = _greedy(target, ids, max_new_tokens + (k if past_stop else 0))
            seq = torch.cat([ids, cont], 1)
            drafts, fc = _chains(draft, seq, _hidden(target, seq, wiring), k)
            drafts, fc_applied = drafts.cpu(), fc_applied or fc
            seq = seq.cpu()
            for b, pr in enumerate(group):
                end = length + _completion_len(cont[b].tolist(), pr.stop_ids, max_new_tokens)
                _walk(drafts[b], seq[b], length, end, counts, past_stop)
            if bar is not None:
                bar.update(len(group))
    if bar is not None:
        bar.close()
    if not counts["steps"]:
        raise KitError("no verify step ran: every completion ended at its first token")
    result = OfflineResult(
        k=k,
        prompts=len(prompts),
        verify_steps=counts["steps"],
        drafted=counts["steps"] * k,
        accepted=counts["accepted"],
        accepted_per_position=counts["pos"],
        emitted=counts["emitted"],
        wiring={
            "as_loaded_by": str(wiring.release),
            "hidden_state": wiring.feeds,
            "aux_layers": wiring.layers if wiring.feeds == "aux_concat" else None,
            "use_d2t": use_d2t,
            "fc_applied": fc_applied,
            "device": device,
            "max_new_tokens": max_new_tokens,
            "counted_as": str(counter),
            "counting": counting.source,
            **wiring.notes,
        },
    )
    pair = check_pair(target_cfg, draft_cfg)
    result.findings = load_findings + wiring.findings + pair + _verdict(result)
    return result


def _completion_len(cont: list[int], stop_ids: list[int], max_new: int) -> int:
    for i, t in enumerate(cont[:max_new]):
        if t in stop_ids:
            return i + 1
    return max_new


def _describe(wiring: dict[str, Any]) -> tuple[str, ...]:
    """The wiring as evidence lines a reader can scan."""
    feed = wiring["hidden_state"]
    if wiring.get("aux_layers"):
        feed += f" (target states {wiring['aux_layers']})"
    return (
        f"loaded as {wiring['as_loaded_by']}",
        f"draft fed: {feed}; fc {'applied' if wiring['fc_applied'] else 'bypassed'}",
        f"d2t map {'used' if wiring['use_d2t'] else 'not used'}",
        f"a step that reaches the stop token counted as {wiring['counted_as']} counts it",
    )


def _verdict(r: OfflineResult) -> list[Finding]:
    al = round(r.accept_len, 2)
    if r.accept_len <= NEAR_ZERO_ACCEPT_LEN:
        return [
            Finding(
                "OFFLINE_NEAR_ZERO_ACCEPTANCE",
                Severity.CRITICAL,
                f"offline accept len {al:.2f} at k={r.k}: almost no drafted token is accepted",
                (f"step-0 accuracy {r.step0_accuracy:.3f}", *_describe(r.wiring)),
                fix="fix the load and hidden-state findings above, then measure again",
                engine=r.wiring.get("as_loaded_by"),
                data=r.to_dict() | {"findings": []},
            )
        ]
    return [
        Finding(
            "OFFLINE_ACCEPTANCE",
            Severity.INFO,
            f"offline accept len {al:.2f} at k={r.k}, step-0 accuracy {r.step0_accuracy:.2f}",
            tuple(f"position {i}: {p:.3f}" for i, p in enumerate(r.per_position)),
            engine=r.wiring.get("as_loaded_by"),
        )
    ]


# ---------------------------------------------------------------------------------------------
# The fault matrix: the incident, one fix at a time.


@dataclass
class MatrixRow:
    label: str
    args: dict[str, Any]
    result: OfflineResult

    def to_dict(self) -> dict[str, Any]:
        return {"label": self.label, "args": self.args} | self.result.to_dict()


def fault_matrix(
    target_dir: str | Path,
    draft_dir: str | Path,
    release: str = "sglang==0.5.10",
    k: int = 5,
    **kw: Any,
) -> list[MatrixRow]:
    """Healthy wiring, then the incident on `release` and its fixes one at a time.

    The key rename is the kit's own fix (`kit.rewrite.plan_fix` + `write_fixed` into a
    temporary folder), then measured as `release` loads the rewritten checkpoint. Every row,
    healthy included, is counted as `release` counts, so the rows compare.
    """
    import tempfile

    from kit.rewrite import plan_fix, write_fixed

    target = load_target(target_dir, kw.get("device", "cpu"))
    kw["count_as"] = kw.get("count_as") or release

    def run(label: str, draft: Path | str, **args: Any) -> MatrixRow:
        return MatrixRow(label, args, evaluate(target_dir, draft, k, target=target, **args, **kw))

    rows = [run("healthy", draft_dir)]
    rows.append(run(f"{release}, aux capture off", draft_dir, as_loaded_by=release,
                    aux_capture=False))  # fmt: skip
    rows.append(run(f"{release}, aux capture on", draft_dir, as_loaded_by=release))
    ck = open_checkpoint(draft_dir)
    plan = plan_fix(ck, load_draft_config(draft_dir), release)
    with tempfile.TemporaryDirectory() as tmp:
        fixed = write_fixed(ck, plan, Path(tmp) / "renamed")
        rows.append(run(f"{release} after kit fix (rename), aux capture off", fixed,
                        as_loaded_by=release, aux_capture=False))  # fmt: skip
        rows.append(run(f"{release} after kit fix (rename), aux capture on", fixed,
                        as_loaded_by=release))  # fmt: skip
    return rows
