"""Where each SGLang release counts its verify steps: the one table `watch`'s counting hooks read.

Every release read counts a decode batch in one `update_spec_metrics(bs, drafts, ...)` call, with
`drafts` the batch's accepted draft tokens, the target's bonus token excluded (the decode log adds
`bs` for it); the caller is the `process_batch_result_decode` handling the batch result, whose
per-request list splits that count. What moved between releases: the classes holding the two
methods, the name of the per-request list, and where the decode log reads D from. Paths are
inside the wheel's `sglang/srt/`.

A release outside every row gets no counting hook (its counts are not recorded, never guessed).
Each of 0.5.10 to 0.5.23 was read; a row begins at the release whose lines it cites (0.5.20-0.5.22
count as 0.5.23 does, at their own lines). Any other release a row covers (post releases, those
after 0.5.23) is the kit's assumption that it counts as the row's first release does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from packaging.version import InvalidVersion, Version

from kit.engines.base import EngineRelease, Row, VersionRange, pick
from kit.errors import KitError

SCHEDULER = "sglang.srt.managers.scheduler:Scheduler"
REPORTER = "sglang.srt.managers.scheduler_components.metrics_reporter:SchedulerMetricsReporter"
PROCESSOR = (
    "sglang.srt.managers.scheduler_components.batch_result_processor:SchedulerBatchResultProcessor"
)


def _d_minus_one(args: Any) -> int:
    """D - 1 with D = speculative_num_draft_tokens, falling back to speculative_num_steps + 1,
    as every release read computes the decode log's drafted tokens per verify step."""
    steps = getattr(args, "speculative_num_steps", None) or 0
    d = getattr(args, "speculative_num_draft_tokens", None) or steps + 1
    return max(int(d) - 1, 0)


def _from_server_args(scheduler: Any) -> int:
    """From the scheduler's server args (0.5.11 observability/scheduler_metrics_mixin.py:534-537)."""
    return _d_minus_one(getattr(scheduler, "server_args", None))


def _from_reporters_scheduler(reporter: Any) -> int:
    """From the server args of the scheduler the metrics reporter belongs to (0.5.13
    managers/scheduler_components/metrics_reporter.py:713-718, before the `spec` bag existed)."""
    return _from_server_args(getattr(reporter, "scheduler", None))


def _from_spec_bag(reporter: Any) -> int:
    """From the process's `spec` config bag (0.5.23 managers/scheduler_components/
    metrics_reporter.py:975-978, read there from 0.5.17 :769-772); where none is published
    (get_spec raises), from the server args of the scheduler the reporter belongs to: a hook must
    never raise into the engine."""
    try:
        from sglang.srt.runtime_context import get_spec  # type: ignore[import-not-found]

        return _d_minus_one(get_spec())
    except (ImportError, ValueError, RuntimeError):
        return _from_reporters_scheduler(reporter)


@dataclass(frozen=True)
class CountSite:
    """One release range's counting: `counter` ("module:Class") holds update_spec_metrics,
    `decoder` holds process_batch_result_decode, `per_request` names the batch result's list of
    accepted drafts per request (bonus excluded; None: the result has none, count in sum only),
    `drafted` gives D - 1 from the counting object."""

    counter: str
    decoder: str
    per_request: str | None
    drafted: Callable[[Any], int]


COUNT_SITES: list[Row[CountSite]] = [
    Row(VersionRange("0.5.6", "0.5.10"), CountSite(SCHEDULER, SCHEDULER, None, _from_server_args),
        "0.5.6 managers/scheduler_metrics_mixin.py:80 Scheduler.update_spec_metrics, called by "
        "managers/scheduler_output_processor_mixin.py:337 (the batch result has no per-request "
        "list: managers/utils.py:23-32)"),
    Row(VersionRange("0.5.10", "0.5.11"),
        CountSite(SCHEDULER, SCHEDULER, "accept_length_per_req_cpu", _from_server_args),
        "0.5.10 observability/scheduler_metrics_mixin.py:180 Scheduler.update_spec_metrics, called "
        "by managers/scheduler_output_processor_mixin.py:426; accept_length_per_req_cpu: accepted "
        "drafts, managers/scheduler_output_processor_mixin.py:344 (accept_lens - 1)"),
    Row(VersionRange("0.5.11", "0.5.12"),
        CountSite(SCHEDULER, SCHEDULER, "num_accepted_drafts_per_req_cpu", _from_server_args),
        "0.5.11 observability/scheduler_metrics_mixin.py:191 Scheduler.update_spec_metrics, called "
        "by managers/scheduler_output_processor_mixin.py:442; num_accepted_drafts_per_req_cpu: "
        "bonus excluded, managers/utils.py:30-31, speculative/eagle_info.py:471-475, "
        "managers/scheduler_output_processor_mixin.py:366 (accept_lens - 1)"),
    Row(VersionRange("0.5.12", "0.5.13"),
        CountSite(SCHEDULER, SCHEDULER, "num_correct_drafts_per_req_cpu", _from_server_args),
        "0.5.12 observability/scheduler_metrics_mixin.py:332 Scheduler.update_spec_metrics, called "
        "by managers/scheduler_output_processor_mixin.py:516 (process_batch_result_decode, :468); "
        "the list renamed num_correct_drafts_per_req_cpu: bonus excluded, managers/utils.py:30-31, "
        "speculative/eagle_info.py:473,481-485, managers/scheduler_output_processor_mixin.py:419 "
        "(accept_lens - 1); D from the server args, scheduler_metrics_mixin.py:683-686"),
    Row(VersionRange("0.5.13", "0.5.17"),
        CountSite(REPORTER, PROCESSOR, "num_correct_drafts_per_req_cpu", _from_reporters_scheduler),
        "0.5.13 managers/scheduler_components/metrics_reporter.py:347 "
        "SchedulerMetricsReporter.update_spec_metrics, called by "
        "managers/scheduler_components/batch_result_processor.py:619 "
        "(SchedulerBatchResultProcessor.process_batch_result_decode, :590); "
        "num_correct_drafts_per_req_cpu: bonus excluded, managers/utils.py:30-31, "
        "batch_result_processor.py:539 (accept_lens - 1); D from the scheduler's server args, "
        "metrics_reporter.py:713-718"),
    Row(VersionRange("0.5.17", "0.5.20"),
        CountSite(REPORTER, PROCESSOR, "num_correct_drafts_per_req_cpu", _from_spec_bag),
        "0.5.17 managers/scheduler_components/metrics_reporter.py:357 "
        "SchedulerMetricsReporter.update_spec_metrics, called by "
        "managers/scheduler_components/batch_result_processor.py:831 "
        "(process_batch_result_decode, :802); num_correct_drafts_per_req_cpu: bonus excluded, "
        "managers/utils.py:50-51, batch_result_processor.py:636 (accept_lens - 1); D from the "
        "spec bag, metrics_reporter.py:769-772 (accept_length_per_req_cpu is a dLLM block length "
        "from 0.5.16, managers/utils.py:54-55, never read)"),
    Row(VersionRange("0.5.20", "0.5.23"),
        CountSite(REPORTER, PROCESSOR, "num_correct_drafts_per_req_cpu", _from_spec_bag),
        "0.5.20 managers/scheduler_components/metrics_reporter.py:462 "
        "SchedulerMetricsReporter.update_spec_metrics, called by "
        "managers/scheduler_components/batch_result_processor.py:954 "
        "(process_batch_result_decode, :920); num_correct_drafts_per_req_cpu: accept_lens - "
        "num_non_draft_tokens_per_req, batch_result_processor.py:756-758, "
        "managers/utils.py:54-55,82; D from the spec bag, metrics_reporter.py:898-901"),
    Row(VersionRange("0.5.23"),
        CountSite(REPORTER, PROCESSOR, "num_correct_drafts_per_req_cpu", _from_spec_bag),
        "0.5.23 managers/scheduler_components/metrics_reporter.py:543 "
        "SchedulerMetricsReporter.update_spec_metrics, called by "
        "managers/scheduler_components/batch_result_processor.py:986; "
        "num_correct_drafts_per_req_cpu: accept_lens - num_non_draft_tokens_per_req, "
        "batch_result_processor.py:785-788, managers/utils.py:62-63 (accept_length_per_req_cpu "
        "is a dLLM block length there, managers/utils.py:66-67, never read)"),
]  # fmt: skip


def site_for(version: str) -> Row[CountSite] | None:
    """The row covering an installed `sglang.__version__` (local tags dropped); None outside
    the table or for a version that does not parse."""
    try:
        release = EngineRelease("sglang", Version(str(version).split("+")[0]))
        return pick(COUNT_SITES, release)
    except (InvalidVersion, KitError):
        return None


def modules() -> set[str]:
    """Every module a row's hook lives in: the ones to patch as they are imported."""
    return {
        part.split(":")[0] for row in COUNT_SITES for part in (row.value.counter, row.value.decoder)
    }
