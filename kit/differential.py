"""A differential diagnosis: for the symptom, every cause that can produce it, and where each stands.

A list of checks answers "what did each check see". A team with a server stuck at
`accept len: 1.00` asks something else: which of the faults that hold acceptance at the floor do I
have, which can I forget, and what do I run to settle the rest? That is how a clinician's note
reads, and how this module reads the findings of every check:

- each cause that can hold acceptance at the floor by itself is **confirmed** (a check found it
  in the inputs), **assumed** (it follows from something the user asserted, not detected),
  **ruled out** (the inputs that would show it were seen and do not), or **unverified** (they
  were not seen: the one input or command that settles it is named);
- server logs given in order are read as a sequence: a log still at the floor after the one
  before it means the change between them did not lift acceptance, so if that change fixed a
  confirmed cause, another fault remains and the unverified suspects lead;
- causes that cost acceptance without holding it at the floor are listed apart, so they are not
  mistaken for the explanation.

It never asserts what it did not see: a cause the inputs cannot settle stays unverified, with the
command (often `kit watch` on the launch line) that observes it in the running engine.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from kit.findings import Finding, Severity

# What shows a server log at (or near) the floor, and one below what the draft should reach.
FLOOR_CODES = frozenset({"ZERO_ACCEPTANCE", "NEAR_ZERO_ACCEPTANCE", "OBSERVED_ZERO_ACCEPTANCE"})
LOW_CODES = frozenset({"BELOW_EXPECTED_ACCEPT_LEN", "LOW_FIRST_POSITION", "ACCEPTANCE_DECAY"})
# Findings about the evidence itself, not about the deployment: never a cause.
META_CODES = frozenset(
    {
        "TRACED_AS_REWRITTEN", "CONFIG_NOT_SERVED", "RELEASE_ASSUMED", "LAUNCH_RELEASE_ASSUMED",
        "ENGINE_FORMAT_CONFLICT", "UNPARSED_LINES", "NO_ACCEPTANCE_DATA", "AUX_CAPTURE_UNVERIFIED",
        "OFFLINE_ACCEPTANCE", "OFFLINE_ACCEPTANCE_UNDETERMINED", "OBSERVED_ACCEPTANCE",
        "OBSERVED_HEALTHY", "OFFLINE_ENGINE_AGREES", "CAPTURE_MODEL_DISAGREES", "STEP_FAILED",
        "NO_SPEEDUP", "ACCEPT_LEN_ABOVE_CHAIN_CAP", "FIX_EFFECT", "FIX_NO_EFFECT",
        "LOW_RATIO_FROM_FULL_DRAFTS",
    }
)  # fmt: skip


class Status(StrEnum):
    CONFIRMED = "confirmed"
    ASSUMED = "assumed"
    UNVERIFIED = "unverified"
    RULED_OUT = "ruled out"


@dataclass(frozen=True)
class Seen:
    """Which inputs the verdict rests on, and what a user would type to give the missing ones."""

    weights: bool = False  # the draft checkpoint's headers (and sampled values) were read
    served_config: bool = False  # the draft config the server read is the one traced
    served_config_why: str = ""  # why it is not, when it is not
    target: bool = False  # the target's config.json
    tokenizer: bool = False  # the target's tokenizer (a target folder): its chat template
    launch: bool = False  # the server's launch line
    engine_observed: bool = False  # a `kit watch` report of the running engine
    aux_capture_given: bool | None = None  # the user asserted aux capture on / off
    widths_equal: bool | None = None  # target hidden == draft hidden: capture off is silent
    server_ran: bool = False  # a log with acceptance figures
    # what the other releases the evidence allows say of the data path (`capture_elsewhere`)
    capture_notes: tuple[str, ...] = ()
    # what the user holds, for commands they can paste
    draft: str | None = None
    target_dir: str | None = None  # the target folder (or its config's) as given
    launch_text: str | None = None
    release: str | None = None


@dataclass(frozen=True)
class Cause:
    """A cause that can hold acceptance at the floor by itself, and how the evidence shows it."""

    key: str
    short: str  # a few words, for sentences that name several causes
    name: str
    codes: frozenset[str]
    needs: tuple[str, ...]  # the `Seen` fields that, all true, rule it out when nothing is found
    settle: Callable[[Seen], str]
    confirms: Callable[[Finding], bool] = lambda f: True
    prefixes: tuple[str, ...] = ()  # codes a family names by prefix (KNOWN_ISSUE_…)

    def names(self, code: str) -> bool:
        return code in self.codes or code.startswith(self.prefixes or ("\0",))


def _draft(s: Seen) -> str:
    return shlex.quote(s.draft) if s.draft else "DRAFT_DIR"


def _watch(s: Seen) -> str:
    line = s.launch_text or "<the server's launch command>"
    return f"python -m kit watch -- {line}"


CAUSES: tuple[Cause, ...] = (
    Cause(
        "decoder",
        "the decoder layer not loaded",
        "the draft's decoder layer is never loaded (keys dropped, weights left at init)",
        frozenset(
            {
                "KEYS_SILENTLY_DROPPED",
                "OBSERVED_PARAMS_UNWRITTEN",
                "OBSERVED_KEYS_SKIPPED",
                "PARAM_LEFT_AT_INIT",
                "TRAINED_MODULE_SKIPPED",
            }
        ),
        ("weights",),
        lambda s: (
            "give the draft checkpoint as the server loaded it (its headers are enough): "
            "python -m kit doctor --draft DRAFT_DIR …"
        ),
        confirms=lambda f: f.code != "PARAM_LEFT_AT_INIT" or f.root_cause,
    ),
    Cause(
        "data_path",
        "aux capture off, fc bypassed",
        "the draft is fed the wrong hidden states: the target's aux capture is off, so fc is "
        "bypassed",
        frozenset({"FC_BYPASSED", "OBSERVED_FC_NOT_RUN", "PIPELINE_AUX_STATES_DROPPED"}),
        ("served_config", "target"),
        lambda s: (
            f"observe the width the draft receives and whether fc runs: {_watch(s)}; or "
            "give the config.json the server read (--draft-config FILE) and the target class it "
            "built (--target-class CLASS)"
        ),
    ),
    Cause(
        "vocab_map",
        "draft ids mapped wrong",
        "draft token ids map to the wrong target ids (d2t missing or invalid, vocabularies differ)",
        frozenset({"D2T_MISSING", "D2T_INVALID", "VOCAB_MISMATCH"}),
        ("weights", "target"),
        lambda s: (
            "give the draft checkpoint (d2t is read from it) and the target's config: "
            f"--draft {_draft(s)} --target-config TARGET_DIR"
        ),
    ),
    Cause(
        "head",
        "the head not the trained one",
        "the draft's head or embedding is not the trained one (missing, replaced by a tied "
        "embedding, or an unsharded scaled embedding)",
        frozenset({"LM_HEAD_MISSING", "TIED_HEAD_DROPPED", "GEMMA_EMBEDDING_NOT_SHARDED"}),
        ("weights",),
        lambda s: "give the draft checkpoint: --draft DRAFT_DIR",
    ),
    Cause(
        "untrained",
        "untrained weights",
        "the weights never trained, hold garbage, or are not served as trained (re-quantized)",
        frozenset(
            {
                "LOOKS_UNTRAINED",
                "OBSERVED_DRAFT_NAN",
                "SHAPE_CONTRADICTS_CONFIG",
                "DRAFT_QUANTIZATION_INHERITED",
            }
        ),
        ("weights",),
        lambda s: f"python -m kit inspect {_draft(s)} --stats (reads every value)",
    ),
    Cause(
        "rope_layout",
        "the rotary layout",
        "the draft's attention rotates its positions in another layout than it trained with "
        "(NeoX against interleaved)",
        frozenset({"DRAFT_ROPE_LAYOUT_MISMATCH"}),
        ("target",),
        lambda s: (
            "give the target's config (its model_type decides the layout): --target-config DIR"
        ),
    ),
    Cause(
        "algorithm",
        "EAGLE-3 not running",
        "the server does not run EAGLE-3 with this draft (another algorithm, or none)",
        frozenset({"ALGORITHM_MISMATCH", "LAUNCH_NO_SPECULATION", "SPECULATION_OFF"}),
        ("launch",),
        lambda s: "give the server's launch line: --launch 'python -m … ' (or the script)",
    ),
    Cause(
        "target_states",
        "quantized target states",
        "the target's hidden states are not the ones the draft trained on (a quantized or "
        "rotated target)",
        frozenset({"QUANTIZED_TARGET", "TARGET_HIDDEN_STATES_ROTATED"}),
        ("target", "launch"),
        lambda s: (
            "give the target's config.json and the launch line: --target-config DIR --launch LINE"
        ),
    ),
)


# Causes that cost acceptance without holding it at the floor: assessed when a log sits below
# what the draft should reach (and listed apart when it sits at the floor).
PARTIAL_CAUSES: tuple[Cause, ...] = (
    Cause(
        "engine",
        "the engine build",
        "the engine loses acceptance on its own: a defect known for this release and these "
        "flags (the draft is not to blame for that part)",
        frozenset({"ACCEPT_LEN_FALLS_WITH_BATCH", "PARALLEL_DRAFTING_ON_V2_RUNNER"}),
        ("launch",),
        lambda s: (
            "give the launch line (--launch LINE): the known defects depend on its flags; "
            "python -m kit engine-check runs your engine build on the kit's calibrated pair"
        ),
        prefixes=("KNOWN_ISSUE_", "ENGINE_"),
    ),
    Cause(
        "aux_ids",
        "other target layers captured",
        "the target captures other layers than the draft was trained on (aux ids off by one, "
        "ignored, or defaulted)",
        frozenset(
            {
                "AUX_LAYER_OFFSET",
                "AUX_IDS_SHIFTED",
                "AUX_IDS_IGNORED",
                "AUX_IDS_DEFAULT",
                "AUX_LAYERS_DIFFER_UNDER_CUDA_GRAPH",
            }
        ),
        ("served_config", "target"),
        lambda s: (
            f"observe the captured layers: {_watch(s)}; or give the config.json the "
            "server read (--draft-config FILE)"
        ),
    ),
    Cause(
        "flags",
        "trained behaviour not run",
        "the release runs the draft differently from its training (norm flags, input norm, "
        "sliding window, later-layer norms)",
        frozenset(
            {
                "TRAINED_FLAG_IGNORED",
                "INPUT_NORM_DISCARDED",
                "TRAINED_NORM_UNUSED",
                "DRAFT_SLIDING_WINDOW_IGNORED",
            }
        ),
        ("served_config",),
        lambda s: "give the config.json the server read (--draft-config FILE)",
    ),
    Cause(
        "positions",
        "RoPE or context misread",
        "the draft's positions are not those it trained with (RoPE scaling or theta, context "
        "length, mrope)",
        frozenset(
            {
                "ROPE_SCALING_MISMATCH",
                "ROPE_THETA_MISMATCH",
                "DRAFT_CONTEXT_SHORT",
                "MROPE_POSITIONS_MISSING",
                "DRAFT_POSITIONS_LATE",
            }
        ),
        ("served_config", "target"),
        lambda s: (
            "give the draft config the server read and the target's config: "
            "--draft-config FILE --target-config DIR"
        ),
    ),
    Cause(
        "prompts",
        "prompts unlike training",
        "requests reach the draft in a form it did not train on (chat template, unreachable "
        "template tokens)",
        frozenset(
            {
                "CHAT_TEMPLATE_MISMATCH",
                "CHAT_TEMPLATE_MISSING",
                "OFFLINE_PROMPT_FORMAT_GAP",
                "TEMPLATE_TOKENS_UNREACHABLE",
            }
        ),
        ("tokenizer",),
        lambda s: (
            "give the target folder with its tokenizer (--target DIR) and the tokenizer "
            "the draft trained with (--train-tokenizer DIR)"
        ),
    ),
    Cause(
        "chain",
        "chain settings",
        "the launch line drafts a chain the draft was not trained for (longer than trained, the "
        "root miscounted)",
        frozenset({"CHAIN_LONGER_THAN_TRAINED", "CHAIN_ROOT_MISCOUNTED"}),
        ("launch",),
        lambda s: "give the server's launch line: --launch LINE",
    ),
    Cause(
        "precision",
        "precision",
        "the served precision differs from training (a half-precision range, a quantized "
        "target, mixed dtypes)",
        frozenset(
            {
                "DTYPE_HALF_RANGE",
                "MIXED_DTYPES",
                "DRAFT_KV_CACHE_UNSCALED",
                "KV_CACHE_SCALE_DEFAULTED",
            }
        ),
        ("target", "launch"),
        lambda s: "give the target's config and the launch line: --target-config DIR --launch LINE",
    ),
)


@dataclass(frozen=True)
class Assessment:
    """Where one cause stands: its status, the evidence for it, and what settles it."""

    cause: Cause
    status: Status
    evidence: tuple[str, ...]
    settle: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "cause": self.cause.key,
            "short": self.cause.short,
            "name": self.cause.name,
            "status": str(self.status),
            "evidence": list(self.evidence),
            "settle": self.settle,
        }


@dataclass(frozen=True)
class LogPoint:
    """One server log in the order given: its mean accept length and whether it sits at the
    floor (no drafted token accepted, or nearly none)."""

    source: str
    accept_len: float | None
    floor: bool
    low: bool = False  # below what the draft should reach, off the floor


@dataclass
class Differential:
    """The symptom, the logs read in order, every floor cause assessed, and the rest."""

    symptom: str
    floor: bool = True  # the floor; else below what the draft should reach
    sequence: list[str] = field(default_factory=list)
    assessments: list[Assessment] = field(default_factory=list)
    partial: list[Finding] = field(default_factory=list)  # costs, not the floor

    @property
    def confirmed(self) -> list[Assessment]:
        return [a for a in self.assessments if a.status in (Status.CONFIRMED, Status.ASSUMED)]

    @property
    def leading(self) -> Assessment | None:
        """The suspect to settle next: the first cause still unverified."""
        return next((a for a in self.assessments if a.status is Status.UNVERIFIED), None)

    def to_dict(self) -> dict[str, Any]:
        lead = self.leading
        return {
            "symptom": self.symptom,
            "floor": self.floor,
            "sequence": self.sequence,
            "causes": [a.to_dict() for a in self.assessments],
            "leading_suspect": lead.cause.key if lead else None,
            "also_costing": [f.code for f in self.partial],
        }


def config_not_served(findings: Sequence[Finding], engine: str | None) -> str:
    """Why the config traced is not the one the server read ("" when it is): the release
    refuses it as saved (`TRACED_AS_REWRITTEN`), so a server that ran read another."""
    rewritten = next((f for f in findings if f.code == "TRACED_AS_REWRITTEN"), None)
    if rewritten is None:
        return ""
    refusal = rewritten.evidence[0].removeprefix("refused: ")
    return f"{engine} refuses the config.json given as saved ({refusal}), so the server read another one"


def diagnose(
    findings: Sequence[Finding], seen: Seen, logs: Sequence[LogPoint] = ()
) -> Differential | None:
    """The differential for the symptom the findings show, or None when there is none (no log
    at the floor or below what the draft should reach): then the findings speak for themselves.

    At the floor, every floor cause is assessed and the partial ones are listed apart; below
    the expectation, every partial cause is assessed, after any floor cause already confirmed."""
    symptom = _symptom(findings, logs)
    if symptom is None:
        return None
    floor = not symptom.startswith("accept len below")
    if floor:
        assessed = _ranked(_assess(c, findings, seen) for c in CAUSES)
    else:
        confirmed = [a for a in map(lambda c: _assess(c, findings, seen), CAUSES)
                     if a.status is Status.CONFIRMED]  # fmt: skip
        assessed = confirmed + _ranked(_assess(c, findings, seen) for c in PARTIAL_CAUSES)
    partial = [
        f
        for f in findings
        if f.severity >= Severity.WARNING
        and f.code not in FLOOR_CODES | LOW_CODES | META_CODES
        and not any(a.cause.names(f.code) for a in assessed)
    ]
    diff = Differential(symptom, floor, assessments=assessed, partial=partial)
    diff.sequence = _sequence(logs, diff)
    return diff


_RANK = {Status.CONFIRMED: 0, Status.ASSUMED: 1, Status.UNVERIFIED: 2, Status.RULED_OUT: 3}


def _ranked(assessed: Iterable[Assessment]) -> list[Assessment]:
    """Confirmed first, then assumed, unverified and ruled out; the table's order within each
    (most often reported first)."""
    items = list(assessed)
    return sorted(items, key=lambda a: _RANK[a.status])


def _symptom(findings: Sequence[Finding], logs: Sequence[LogPoint]) -> str | None:
    floor = [p for p in logs if p.floor]
    if floor or any(f.code in FLOOR_CODES for f in findings):
        names = ", ".join(p.source for p in floor) or "the running engine"
        return f"acceptance at the floor (no drafted token accepted) in {names}"
    low = [f for f in findings if f.code in LOW_CODES]
    if low:
        return "accept len below what the draft should reach: " + "; ".join(f.title for f in low)
    return None


def _assess(cause: Cause, findings: Sequence[Finding], seen: Seen) -> Assessment:
    hits = [f for f in findings if cause.names(f.code) and cause.confirms(f)]
    if hits:
        status = Status.ASSUMED if _asserted(cause, hits, seen) else Status.CONFIRMED
        evidence = tuple(f"{f.code}: {f.title}" for f in hits)
        return Assessment(cause, status, evidence)
    missing = [n for n in cause.needs if not getattr(seen, n)]
    if cause.key == "data_path":
        return _data_path(cause, seen, missing)
    if missing:
        return Assessment(cause, Status.UNVERIFIED, (_not_seen(missing, seen),), cause.settle(seen))
    return Assessment(cause, Status.RULED_OUT, (f"checked in {_inputs(cause.needs)}: not found",))


def _asserted(cause: Cause, hits: Sequence[Finding], seen: Seen) -> bool:
    """The data-path finding follows from `--no-aux-capture` when the user gave it."""
    return (
        cause.key == "data_path"
        and seen.aux_capture_given is False
        and not any(f.code == "OBSERVED_FC_NOT_RUN" for f in hits)
    )


def _data_path(cause: Cause, seen: Seen, missing: list[str]) -> Assessment:
    """Capture off is silent only where the target's state is as wide as the draft's; elsewhere
    fc (or the draft layer) crashes at the first batch, which a server that ran rules out."""
    if seen.widths_equal is False and seen.server_ran:
        return Assessment(
            cause,
            Status.RULED_OUT,
            (
                "the target's hidden size differs from the draft's: with capture off the first "
                "batch would crash, and the logs show the server ran",
            ),
        )
    if seen.engine_observed:
        return Assessment(cause, Status.RULED_OUT, ("kit watch saw fc run in the engine",))
    if seen.aux_capture_given is True:
        return Assessment(cause, Status.ASSUMED, ("aux capture on, as given",))
    if missing:
        evidence = (_not_seen(missing, seen), *seen.capture_notes)
        return Assessment(cause, Status.UNVERIFIED, evidence, cause.settle(seen))
    return Assessment(
        cause,
        Status.RULED_OUT,
        (
            f"predicted from {seen.release or 'the release'}'s capture rules for the served config "
            "and target class (kit watch observes it)",
        ),
    )


_WHAT = {
    "weights": "the draft checkpoint",
    "served_config": "the draft config the server read",
    "target": "the target's config",
    "launch": "the launch line",
}


def _inputs(needs: Sequence[str]) -> str:
    return " and ".join(_WHAT[n] for n in needs)


def _not_seen(missing: Sequence[str], seen: Seen) -> str:
    why = (
        f" ({seen.served_config_why})"
        if "served_config" in missing and seen.served_config_why
        else ""
    )
    return f"not seen: {_inputs(missing)}{why}"


def _sequence(logs: Sequence[LogPoint], diff: Differential) -> list[str]:
    """The logs as the attempts they are: what each change between two of them did."""
    lines = []
    for i, p in enumerate(logs):
        figure = f"accept len {p.accept_len:.2f}" if p.accept_len is not None else "no figure"
        state = "at the floor" if p.floor else "below expected" if p.low else "off the floor"
        if i == 0:
            lines.append(f"{p.source}: {figure}, {state}")
            continue
        prev = logs[i - 1]
        if prev.floor and p.floor:
            lines.append(
                f"{p.source}: {figure}, still at the floor: the change between {prev.source} "
                f"and {p.source} did not lift acceptance{_second_fault(diff)}"
            )
        elif prev.floor:
            lines.append(
                f"{p.source}: {figure}, {state}: the change before it lifted it off the floor"
            )
        elif p.floor:
            lines.append(f"{p.source}: {figure}, back at the floor after {prev.source}")
        else:
            lines.append(f"{p.source}: {figure}, {state}")
    return lines


def _second_fault(diff: Differential) -> str:
    """What a floor that survived a change implies, given the causes already confirmed."""
    confirmed = [a.cause.short for a in diff.confirmed]
    if len(confirmed) > 1:
        return (
            f". {len(confirmed)} confirmed causes ({', '.join(confirmed)}) each hold acceptance at "
            "the floor: a fix of one alone leaves it there"
        )
    if not confirmed:
        return ""
    lead = diff.leading
    then = (
        f"; the leading remaining suspect is {lead.cause.short} ({lead.status})"
        if lead
        else "; no cause the kit knows is left unverified: observe the engine (kit watch)"
    )
    return (
        f". If it fixed the confirmed cause ({confirmed[0]}), another fault still holds "
        f"acceptance at the floor{then}"
    )
