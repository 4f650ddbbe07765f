"""Verification as a server runs it: greedy, or speculative sampling at a temperature.

Speculative sampling (Leviathan et al. 2023, Chen et al. 2023): the draft draws token d from its
distribution q, the target accepts it with probability min(1, p(d)/q(d)); on rejection the
target draws the next token from the normalised residual max(0, p − q) and the step ends. The
text emitted is then distributed exactly as the target's own sampling, whatever the draft does.

That last fact lets the kit sample once per prompt instead of once per verify step. For a
position whose drafted token came from q and was verified against p:

    P(accepted, emitted x) = q(x)·min(1, p(x)/q(x)) = min(p(x), q(x))
    P(emitted x)           = p(x)
    P(accepted | emitted x) = min(1, q(x)/p(x))

and an accepted token is the emitted one, so the draft's chain goes on along the same text. So
the kit samples the target's continuation first (one target pass per prompt group), then every
accept decision given it: the same joint law of (text, accepted counts) as replaying each draw.
At temperature 0 both distributions are one-hot and a drafted token is accepted exactly when it
is the target's greedy token: greedy verification, with no random draw at all.

Servers need not draft by sampling q. vLLM's EAGLE proposer drafts the argmax d of the draft's
logits and gives its rejection sampler no q, which then takes q as one-hot at d: d is accepted
with probability p(d), and on rejection the next token comes from p without d. SGLang's EAGLE
worker drafts the argmax too and verifies target-only (its kernel accepts d when a uniform coin
falls below p(d) / threshold_acc, or p(d) >= threshold_single; both thresholds default to 1), which
at its default thresholds is the same rule. Given the emitted x, d was accepted exactly when
x = d, whatever the temperature (`argmax_accepted`; `DraftProposal` in `kit.engines.base`, each
engine's `acceptance.DRAFT_PROPOSAL`). The draft's confidence then
counts for nothing: a draft equal to the target accepts Σ min(p, q) = 1 of its tokens when it
samples, but only p(argmax) when it proposes the argmax.

`p` and `q` are the distributions the server samples from: logits / temperature, softmax, then
top-p (the smallest set of most likely tokens whose mass reaches `top_p`), renormalised.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from kit.offline_acceptance.counts import Counts

TINY = 1e-30  # p(x) of an emitted token is never 0 in exact arithmetic; guards the division
CHUNK = 1024  # rows of logits turned into distributions at a time


@dataclass(frozen=True)
class Sampler:
    """How the server picks a token from logits: greedy (temperature 0) or sampled."""

    temperature: float = 0.0
    top_p: float = 1.0

    @property
    def greedy(self) -> bool:
        return self.temperature == 0

    def probs(self, logits: torch.Tensor) -> torch.Tensor:
        """The sampling distribution over the last dimension (float32; temperature > 0: greedy
        verification needs no distribution, `draw` takes the argmax)."""
        p = (logits.float() / self.temperature).softmax(-1)
        if self.top_p < 1:
            ranked, order = p.sort(-1, descending=True)
            keep = ranked.cumsum(-1) - ranked < self.top_p  # the most likely one always stays
            p = torch.zeros_like(p).scatter(-1, order, ranked * keep)
            p = p / p.sum(-1, keepdim=True)
        return p

    def draw(self, logits: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """One token per row; sampled on the CPU with `generator`, so runs repeat anywhere."""
        if self.greedy:
            return logits.argmax(-1).cpu()
        return torch.multinomial(self.probs(logits).cpu(), 1, generator=generator)[:, 0]

    def probability_of(self, logits: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
        """The sampler's probability of token `index` (same shape as `logits[..., 0]`; −1 marks
        a token this vocabulary does not have, probability 0). Computed `CHUNK` rows at a time:
        a float32 distribution (and top-p's sorted copy) over a real vocabulary for every
        position at once would hold several times the logits."""
        flat, at = logits.reshape(-1, logits.shape[-1]), index.reshape(-1, 1).to(logits.device)
        out = torch.cat([
            self.probs(flat[i : i + CHUNK]).gather(-1, at[i : i + CHUNK].clamp_min(0))[:, 0]
            for i in range(0, len(flat), CHUNK)
        ])  # fmt: skip
        return (out * (at[:, 0] >= 0)).reshape(index.shape)


def accept_probability(q: torch.Tensor, p: torch.Tensor) -> torch.Tensor:
    """P(the drafted token is accepted | the server emitted x there) = min(1, q(x)/p(x)), for
    the draft's probability `q` and the target's `p` of the emitted token x."""
    return (q / p.clamp_min(TINY)).clamp(max=1.0)


def argmax_accepted(drafted: torch.Tensor, emitted: torch.Tensor) -> torch.Tensor:
    """P(the drafted token is accepted | the server emitted x there) for an argmax proposal
    verified with the target's probability of it: 1 where x is the drafted token, else 0 (a
    rejection draws from p without it). Greedy verification is the same indicator."""
    return (drafted == emitted).float()


def walk(
    accept_p: torch.Tensor,
    draws: torch.Tensor,
    start: int,
    end: int,
    past_stop: bool = False,
) -> Counts:
    """Verify steps of one sequence: the prefill emits token `start`; steps run until the request
    finishes at token `end - 1` (its stop token or its length limit).

    `accept_p[t, j]` is P(accept | emitted) for drafted token j of the chain that starts after
    token t (row t reads the target's state at t and token t + 1), `draws` uniform numbers of the
    same shape; a drafted token is accepted when its draw falls below its probability and every
    token before it was accepted. The step that reaches the last token emits nothing after it;
    whether the drafted tokens the target also verified past it count depends on the release
    (`STOP_COUNTING` in the engine's `acceptance` rules): `past_stop` counts them, as vLLM's
    counters do, and needs `k` rows of `accept_p` after `end`.
    """
    k = accept_p.shape[-1]
    c = Counts(per_position=[0] * k)
    p = start
    while p < end - 1:
        left = end - 1 - p  # tokens this request still emits, its last one included
        n = k if past_stop else min(k, left)
        run = (draws[p - 1, :n] < accept_p[p - 1, :n]).long().cumprod(0)
        a = int(run.sum()) if past_stop else min(int(run.sum()), left - 1)
        c.steps += 1
        c.accepted += a
        for i in range(a):
            c.per_position[i] += 1
        c.emitted += min(a + 1, left)
        p += a + 1
    return c
