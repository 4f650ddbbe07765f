"""Offline acceptance of an EAGLE-3 draft on its target: the measurement.

`evaluate(target_dir, draft_dir, engine)` runs what a server does with `topk = 1`: chain drafting
of `k` tokens, verification by the target (greedy, or speculative sampling at a temperature),
`a` = the leading drafted tokens accepted, `a + 1` tokens emitted per verify step. The text a
server emits does not depend on the draft (greedy verification emits the target's greedy
continuation, speculative sampling text distributed as the target's own sampling), so:

  1. the target continues each prompt once (greedy, or sampled with a seeded generator);
  2. one target pass over prompt + continuation gives the hidden states the draft is fed and,
     when sampling, the target's probability of each emitted token;
  3. the draft's chains run from every position at once along that text (`kit.tracing.draft.ChainCache`)
     and give, for each drafted token, the probability it is accepted (`kit.offline_acceptance.sampling`),
     under the counting release's rule for what is drafted (its `acceptance.DRAFT_PROPOSAL`);
  4. each prompt's verify steps are walked: exact counts when greedy, one seeded draw per drafted
     token when sampling.

What reaches the draft (its weights, the hidden state, the vocabulary map) is planned by the
other analyses (`kit.offline_acceptance.wiring`); a wiring the release cannot run is a row with its crash
finding, never a failed run. Prompts are bounded line completions (free-running greedy text falls
into loops that inflate acceptance): each completion stops at a stop token or after
`max_new_tokens`. Engines count the verify step that reaches that last token differently (each
engine's `acceptance.STOP_COUNTING`), so the figures count it as one named release does:
`engine` unless `count_as` says otherwise.
"""

from __future__ import annotations

import time
import weakref
from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import torch

from kit.checkpoint.config import TargetConfig, load_target_config
from kit.checkpoint.draft import Draft, open_draft
from kit.checkpoint.inspection import check_pair
from kit.engines import ENGINES, EngineRelease, Row, VersionRange, parse_engine, pick
from kit.engines.base import DraftProposal
from kit.errors import KitError
from kit.offline_acceptance.intervals import CONFIDENCE, RESAMPLES
from kit.offline_acceptance.prompts import Prompt, PromptFormat, chat_prompts, resolve_prompts
from kit.offline_acceptance.result import (
    OfflineResult,
    OfflineRow,
    Settings,
    positions_verdict,
    verdict,
)
from kit.offline_acceptance.sampling import (
    Counts,
    Sampler,
    accept_probability,
    argmax_accepted,
    walk,
)
from kit.offline_acceptance.target import (
    DeviceMap,
    check_device,
    input_device,
    load_target,
    peak_memory,
    reset_peak_memory,
)
from kit.offline_acceptance.wiring import HEALTHY_RELEASE, Feed, Wiring, load_draft, plan_wiring
from kit.tracing.draft import ChainCache, Eagle3Draft, chain_positions

PROGRESS_MIN_GROUPS = 8  # a progress bar (on a terminal only) from this many prompt groups on
# an engine whose `acceptance` has no DRAFT_PROPOSAL rows: verified as the papers write it
PAPERS_PROPOSAL = Row(
    VersionRange("0"),
    DraftProposal.SAMPLED,
    "speculative sampling as Leviathan et al. 2023 write it (this engine's rule not read)",
)


@dataclass(frozen=True, kw_only=True)
class Options:
    """How to measure: chain length, verification, prompts, counting, hardware, intervals."""

    k: int = 5  # drafted tokens per verify step
    max_new_tokens: int = 24  # a completion's length limit
    temperature: float = 0.0  # 0: greedy verification; above: speculative sampling
    top_p: float = 1.0
    seed: int = 0  # sampling draws and bootstrap resamples
    prompt_format: PromptFormat = PromptFormat.RAW
    count_as: str | None = None  # whose stop counting (default: the wiring's release)
    device: str = "cpu"  # the draft's device, and the target's unless device_map is given
    device_map: DeviceMap | None = None  # spread the target over every visible device
    threads: int | None = 1  # torch CPU threads for the run (figures repeat on a busy machine)
    progress: bool = True
    resamples: int = RESAMPLES
    confidence: float = CONFIDENCE

    def __post_init__(self) -> None:
        problems = [
            (self.k < 1, f"k must be at least 1, got {self.k}"),
            (
                self.max_new_tokens < 2,
                f"max_new_tokens must be at least 2, got "
                f"{self.max_new_tokens}: the prefill emits the first token, verify steps the rest",
            ),
            (not self.temperature >= 0, f"temperature must be 0 or above, got {self.temperature}"),
            (not 0 < self.top_p <= 1, f"top_p must be in (0, 1], got {self.top_p}"),
            (self.resamples < 100, f"resamples must be at least 100, got {self.resamples}"),
            (
                not 0.5 <= self.confidence < 1,
                f"confidence must be in [0.5, 1), got {self.confidence}",
            ),
        ]
        for bad, message in problems:
            if bad:
                raise KitError(message)
        check_device(self.device)  # each a line before the target loads
        if self.count_as is not None:
            parse_engine(self.count_as)
        try:
            object.__setattr__(self, "prompt_format", PromptFormat(self.prompt_format))
            if self.device_map is not None:
                object.__setattr__(self, "device_map", DeviceMap(self.device_map))
        except ValueError as e:
            raise KitError(str(e)) from None

    @property
    def sampler(self) -> Sampler:
        return Sampler(self.temperature, self.top_p)


def evaluate(
    target_dir: str | Path,
    draft: str | Path | Draft,
    engine: str | None = None,
    *,
    aux_capture: bool | None = None,
    target_class: str | None = None,
    aux_layers: Sequence[int] | None = None,
    use_d2t: bool = True,
    prompts: list[Prompt] | str | Path | None = None,
    target=None,
    target_config: TargetConfig | None = None,
    label: str | None = None,
    **options,
) -> OfflineRow:
    """Offline acceptance of `draft` on `target_dir`, wired as `engine` wires it for the
    target class (None: the healthy wiring), with the what-ifs given; `options` are `Options`.

    `draft`: its folder, or the draft opened once (`open_draft`) for every row of a command.
    `prompts`: objects, a JSONL file, or None for `prompts.jsonl` beside the target. `target`: a
    loaded target model to reuse across rows; `target_config`: `target_dir`'s config, read once
    for every row of a command (None: read here).
    """
    opts = Options(**options)
    target_dir, opened = Path(target_dir), open_draft(draft, weights=True)
    counting = stop_counting(opts.count_as or engine or HEALTHY_RELEASE)
    target_cfg = target_config or load_target_config(target_dir)
    given = resolve_prompts(prompts, target_dir, target_cfg.vocab_size)
    sent = given
    if opts.prompt_format == PromptFormat.CHAT:
        sent = chat_prompts(given, target_dir, target_cfg.vocab_size)
    draft_cfg = opened.draft_config
    plan = plan_wiring(
        opened.checkpoint,
        draft_cfg,
        target_cfg,
        engine,
        aux_capture=aux_capture,
        target_class=target_class,
        aux_layers=aux_layers,
        use_d2t=use_d2t,
    )
    findings = plan.findings + check_pair(target_cfg, draft_cfg)
    label = label or default_label(plan.wiring)
    if plan.crash is not None:
        return OfflineRow(label, plan.wiring, crash=plan.crash, findings=findings)
    with _threads(opts.threads):
        if target is None:
            target = load_target(target_dir, opts.device, opts.device_map)
        module = load_draft(opened, plan, target, opts.device)
        key = hash(tuple(tuple(p.ids) for p in given))  # chat-rendered or raw: same prompts
        result = measure(target, module, plan.wiring, sent, opts, counting, key, label)
    late = positions_verdict(result)
    result.findings = [*findings, verdict(result), *([late] if late else [])]
    return OfflineRow(label, result.wiring, result, findings=list(result.findings))


def stop_counting(release: str) -> tuple[EngineRelease, Row[bool]]:
    """Whether `release` counts drafts verified past a request's last token, and the rule."""
    counter = parse_engine(release)
    return counter, pick(ENGINES[counter.name].acceptance.STOP_COUNTING, counter)


def draft_proposal(counter: EngineRelease) -> Row[DraftProposal]:
    """What `counter`'s verification at a temperature is given for each drafted token."""
    rows = getattr(ENGINES[counter.name].acceptance, "DRAFT_PROPOSAL", None)
    return PAPERS_PROPOSAL if rows is None else pick(rows, counter)


def default_label(w: Wiring) -> str:
    if w.healthy and not w.what_if:
        return "healthy"
    base = (
        "healthy" if w.healthy else f"{w.release}, aux capture {'on' if w.aux_capture else 'off'}"
    )
    return ", ".join([base, *w.what_if])


# ---------------------------------------------------------------------------------------------
# The measurement.


def measure(
    target,
    draft: Eagle3Draft,
    wiring: Wiring,
    prompts: list[Prompt],
    opts: Options,
    counting: tuple[EngineRelease, Row[bool]],
    prompts_key: int,
    label: str | None = None,
) -> OfflineResult:
    """Every prompt's verify steps under one wiring (module doc, steps 1-4); `label` names the
    row on its progress bar (default: the wiring's own description).

    A wiring whose release runs the draft steps after the first late is also measured with
    every step where trained (`OfflineResult.trained_positions`): the same text, target pass
    and draws, only the chains run again."""
    (counter, rule), sampler = counting, opts.sampler
    past_stop, proposal = rule.value, draft_proposal(counter).value
    generator = torch.Generator().manual_seed(opts.seed)
    here, there = input_device(target), torch.device(opts.device)
    groups: dict[int, list[int]] = defaultdict(list)  # equal-length prompts run as one batch
    for i, pr in enumerate(prompts):
        groups[len(pr.ids)].append(i)
    lateness = (wiring.late_positions, 0) if wiring.late_positions else (0,)
    per_prompt = {late: [Counts() for _ in prompts] for late in lateness}
    fc_applied, t0 = False, time.perf_counter()
    reset_peak_memory()
    shown = opts.progress and len(groups) >= PROGRESS_MIN_GROUPS
    bar = _progress(shown, len(prompts), label or bar_label(wiring))
    with torch.inference_mode():
        for length, members in sorted(groups.items()):
            ids = torch.tensor([prompts[i].ids for i in members], device=here)
            new = opts.max_new_tokens + (opts.k if past_stop else 0)
            seq = torch.cat([ids.cpu(), continued(target, ids, new, sampler, generator)], 1)
            fed, p_next = target_pass(target, seq.to(here), wiring, sampler, there)
            ends = [
                length + completion_len(seq[b, length:].tolist(), prompts[i].stop_ids,
                                        opts.max_new_tokens)
                for b, i in enumerate(members)
            ]  # fmt: skip
            draws = None
            for late in lateness:
                accept_p, fc = chain_acceptance(
                    draft, seq.to(there), fed, opts.k, sampler, p_next, proposal, late
                )
                accept_p, fc_applied = accept_p.cpu(), fc_applied or fc
                if draws is None:  # one set of draws for every lateness: paired figures
                    draws = (
                        torch.zeros_like(accept_p)
                        if sampler.greedy
                        else torch.rand(accept_p.shape, generator=generator)
                    )
                for b, i in enumerate(members):
                    per_prompt[late][i] = walk(accept_p[b], draws[b], length, ends[b], past_stop)
            bar.update(len(members))
    bar.close()
    if not any(c.steps for c in per_prompt[0]):
        raise KitError("no verify step ran: every completion ended at its first token")
    resources = {"seconds": round(time.perf_counter() - t0, 3), **peak_memory()}
    settings, measured = _settings(opts, counter, rule), replace(wiring, fc_applied=fc_applied)
    result = OfflineResult(
        measured, settings, per_prompt[lateness[0]], prompts_key, resources=resources
    )
    if wiring.late_positions:
        trained = replace(measured, late_positions=0,
                          what_if=(*measured.what_if, "every draft step where trained"))  # fmt: skip
        result.trained_positions = OfflineResult(trained, settings, per_prompt[0], prompts_key)
    return result


def _settings(opts: Options, counter: EngineRelease, rule: Row[bool]) -> Settings:
    where = opts.device if opts.device_map is None else f"{opts.device}, target {opts.device_map}"
    return Settings(
        k=opts.k,
        prompt_format=str(opts.prompt_format),
        temperature=opts.temperature,
        top_p=opts.top_p,
        seed=opts.seed,
        max_new_tokens=opts.max_new_tokens,
        counted_as=str(counter),
        counting=rule.source,
        proposal=proposal_text(draft_proposal(counter)),
        device=where,
        resamples=opts.resamples,
        confidence=opts.confidence,
    )


def proposal_text(row: Row[DraftProposal]) -> str:
    """The rule a sampled result follows, in words, with its source."""
    if row.value == DraftProposal.ARGMAX:
        said = "the draft's argmax, accepted with the target's probability of it"
    else:
        said = "drawn from the draft, accepted with min(1, p/q)"
    return f"{said} ({row.source})"


# The target's continuation of a prompt group does not depend on the draft: every wiring of a
# what-if matrix, and every later call on the same loaded target, reuses it. Kept per target
# (dropped with it), keyed by everything it depends on, the generator's state included, whose
# state after it is restored on reuse so sampled runs repeat draw for draw.
_CONTINUED: weakref.WeakKeyDictionary[Any, dict[tuple, tuple[torch.Tensor, torch.Tensor]]] = (
    weakref.WeakKeyDictionary()
)
CONTINUED_MAX = 1024  # prompt groups kept per target (a few KB each)


def continued(
    target, ids: torch.Tensor, new_tokens: int, sampler: Sampler, generator: torch.Generator
) -> torch.Tensor:
    """`continuation`, computed once per target, prompts, sampler and generator state.

    A greedy continuation is the first `new_tokens` of any longer one (each token is the argmax
    given those before it, computed the same way), so a release that counts drafts verified past
    a request's end (k tokens more) and one that does not share one text. A sampled one leaves
    the generator where its last draw did, and the accept draws come after: its length is in
    the key."""
    state = generator.get_state()
    key = (
        ids.cpu().numpy().tobytes(),
        tuple(ids.shape),
        None if sampler.greedy else new_tokens,
        sampler,
        state.numpy().tobytes(),
    )
    memo = _CONTINUED.setdefault(target, {})
    held = memo.get(key)
    if held is None or held[0].shape[1] < new_tokens:
        if len(memo) >= CONTINUED_MAX:
            memo.clear()
        held = memo[key] = (
            continuation(target, ids, new_tokens, sampler, generator),
            generator.get_state(),
        )
    tokens, after = held
    generator.set_state(after)
    return tokens[:, :new_tokens]


def continuation(
    target, ids: torch.Tensor, new_tokens: int, sampler: Sampler, generator: torch.Generator
) -> torch.Tensor:
    """The target's own continuation of a batch of equal-length prompts, `new_tokens` long, on
    the CPU: what the server emits whatever the draft proposes (stop tokens do not stop it)."""
    out = target(input_ids=ids, use_cache=True)
    tokens = []
    for i in range(new_tokens):
        nxt = sampler.draw(out.logits[:, -1], generator)
        tokens.append(nxt)
        if i + 1 < new_tokens:
            out = target(
                input_ids=nxt[:, None].to(ids.device),
                past_key_values=out.past_key_values,
                use_cache=True,
            )
    return torch.stack(tokens, 1)


def target_pass(
    target, seq: torch.Tensor, wiring: Wiring, sampler: Sampler, device: torch.device
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """What the draft is fed over `seq` (on `device`) and, when sampling, the target's
    probability of each next token of `seq` (`[B, T-1]`)."""
    out = target(input_ids=seq, output_hidden_states=True)
    hs = out.hidden_states  # [embeddings, after layer 1, …, final (post-norm in transformers)]
    if wiring.feeds == Feed.FINAL_HIDDEN_POST_NORM:
        fed = hs[-1].to(device)
    else:
        fed = torch.cat([hs[i].to(device) for i in wiring.layers], -1)
    if sampler.greedy:
        return fed, None
    return fed, sampler.probability_of(out.logits[:, :-1], seq[:, 1:]).to(device)


def chain_acceptance(
    draft: Eagle3Draft,
    seq: torch.Tensor,
    fed: torch.Tensor,
    k: int,
    sampler: Sampler,
    p_next: torch.Tensor | None,
    proposal: DraftProposal = DraftProposal.SAMPLED,
    late: int = 0,
) -> tuple[torch.Tensor, bool]:
    """P(accept | emitted) `[B, T-1, k]` for the chain that starts at every row, and whether fc
    ran. Row t starts from the target's state at t and token t+1; step j drafts token t+2+j and
    is fed the token the server emitted there (the drafted one, whenever it was accepted). Step
    j runs at position t+j, `late` positions later for j ≥ 1 (`chain_positions`).

    Greedy, or an ARGMAX proposal at a temperature: the drafted token is the draft's argmax and
    is accepted exactly when it is the emitted token (accepted with p(d), else the target draws
    from p without d: given the text, acceptance is certain or impossible). A SAMPLED proposal:
    min(1, q/p) of the emitted token (`kit.offline_acceptance.sampling`)."""
    rows = seq.shape[1] - 1
    pos = torch.arange(rows, device=seq.device)
    cache = ChainCache(len(draft.model.decoder_layers()))
    # a GPU target may run in bf16; the draft runs in fp32 (its final norm: every draft has one,
    # not every draft an fc)
    dtype = draft.model.norm.weight.dtype
    emitted = torch.nn.functional.pad(seq, (0, k + 1), value=-1)  # -1: past the sequence
    if p_next is not None:
        p_next = torch.nn.functional.pad(p_next, (0, k + 2), value=1.0)
    index = draft_index(draft, int(seq.max()) + 1)
    tokens, h, own, out, fc = seq[:, 1:], fed[:, :rows].to(dtype), False, [], False
    for j in range(k):
        logits, h = draft(tokens, h, chain_positions(pos, j, late), cache, own)
        fc = fc or (j == 0 and bool(draft.fc_applied))
        truth = emitted[:, 2 + j : 2 + j + rows]
        if sampler.greedy or proposal == DraftProposal.ARGMAX:  # accepted iff it was emitted
            out.append(argmax_accepted(draft.to_target_ids(logits.argmax(-1)), truth))
        else:
            ids = torch.where(truth >= 0, index[truth.clamp_min(0)], -1)
            q = sampler.probability_of(logits, ids)
            out.append(accept_probability(q, p_next[:, 1 + j : 1 + j + rows]))
        tokens, own = truth.clamp_min(0), True
    return torch.stack(out, -1), fc


def draft_index(draft: Eagle3Draft, vocab: int) -> torch.Tensor:
    """For every target id, the draft id that proposes it (−1: outside the draft's vocabulary).
    `d2t` maps draft ids one to one, as every trainer writes it."""
    n = draft.cfg.effective_draft_vocab
    device = draft.model.norm.weight.device
    targets = draft.to_target_ids(torch.arange(n, device=device))
    index = torch.full((max(vocab, int(targets.max()) + 1),), -1, dtype=torch.long, device=device)
    index[targets] = torch.arange(n, device=device)
    return index


def completion_len(cont: list[int], stop_ids: list[int], max_new: int) -> int:
    for i, t in enumerate(cont[:max_new]):
        if t in stop_ids:
            return i + 1
    return max_new


@contextmanager
def _threads(n: int | None) -> Iterator[None]:
    """Pin torch's CPU threads for the run (restored after); None leaves them alone."""
    before = torch.get_num_threads()
    if n is not None:
        torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def _progress(enabled: bool, total: int, desc: str):
    """A tqdm bar on a terminal only: in a pipe or a CI log it stays silent (`disable=None`).
    It names the row it measures, so a notebook's several bars can be told apart."""
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="prompt", disable=None if enabled else True)


def bar_label(wiring: Wiring) -> str:
    """`healthy`, or the release with its aux capture and what-ifs: what one bar measures."""
    if wiring.healthy:
        return "healthy"
    parts = [str(wiring.release), f"aux capture {'on' if wiring.aux_capture else 'off'}"]
    return ", ".join(parts + list(wiring.what_if))
