"""The deployment rules a launch line decides: its flags, the algorithm against the draft, the
draft chain length, and runtime issues known for the release and settings it names.

Each release-dependent rule reads the engine's version-ranged rows
(`kit/engines/<engine>/serving.py`) and cites the row's source.
"""

from __future__ import annotations

import importlib
from types import ModuleType

from kit.checkpoint.config import DraftConfig
from kit.deployment.arguments import Problem
from kit.deployment.draftkind import DraftKind, Kind
from kit.deployment.served import Served
from kit.engines import pick
from kit.engines.serving import Method
from kit.findings import Finding, Severity


def rows_of(s: Served) -> ModuleType:
    return importlib.import_module(f"kit.engines.{s.engine}.serving")


def launch_findings(s: Served) -> list[Finding]:
    """Flags the release does not accept, the release assumed, a line without speculation."""
    out = []
    table = f"{s.release} flag table ({s.engine} flags.json, read from the release's wheel)"
    unknown = [i for i in s.arguments.issues if i.problem in (Problem.UNKNOWN, Problem.AMBIGUOUS)]
    if unknown:
        out.append(
            Finding(
                code="LAUNCH_UNKNOWN_FLAG",
                severity=Severity.ERROR,
                title=f"{len(unknown)} flag(s) {s.release} does not define: the server refuses "
                "to start",
                evidence=tuple(f"{i.spelled}: {i.problem.value}; {i.detail}" for i in unknown),
                fix="use the release's spelling (`--help` of the same release lists them), or the "
                "release the line was written for (--engine ENGINE==X)",
                engine=str(s.release),
                source=table,
            )
        )
    bad = [i for i in s.arguments.issues if i.problem in (Problem.BAD_VALUE, Problem.MISSING_VALUE)]
    if bad:
        out.append(
            Finding(
                code="LAUNCH_BAD_VALUE",
                severity=Severity.ERROR,
                title=f"{len(bad)} flag value(s) {s.release} rejects: the server refuses to start",
                evidence=tuple(
                    f"{i.spelled}: {i.detail}" + (f" ({i.flag.source})" if i.flag else "")
                    for i in bad
                ),
                fix="give each flag a value of its type, one of its choices",
                engine=str(s.release),
                source=table,
            )
        )
    if not s.release_given:
        out.append(_assumed(s))
    if s.method is None:
        out.append(
            Finding(
                code="LAUNCH_NO_SPECULATION",
                severity=Severity.WARNING,
                title="the launch line starts no speculative decoding: the draft is never used",
                evidence=(f"{s.command.entrypoint} with no speculative algorithm or config",),
                fix="add the speculative flags (sglang --speculative-algorithm EAGLE3 "
                "--speculative-draft-model-path D; vllm --speculative-config "
                '\'{"method": "eagle3", "model": "D", "num_speculative_tokens": N}\')',
                engine=str(s.release),
            )
        )
    return out


def _assumed(s: Served) -> Finding:
    fitting = s.fitting
    span = f"{fitting[0]} … {fitting[-1]}" if len(fitting) > 1 else (fitting or ("none",))[0]
    return Finding(
        code="LAUNCH_RELEASE_ASSUMED",
        severity=Severity.INFO,
        title=f"no release given: the line was judged as {s.release}",
        evidence=(
            f"{s.engine} releases whose parser accepts every flag on the line: {span} "
            f"({len(fitting)} of the releases read)",
            "version-ranged rules use the newest of them",
        ),
        fix=f"pass --engine {s.engine}==X for the release you serve with",
        engine=str(s.release),
    )


def algorithm(s: Served, kind: Kind) -> list[Finding]:
    """The algorithm the line runs against the draft it loads."""
    if s.method is None or kind.kind is DraftKind.UNKNOWN:
        return []
    wants = Method.EAGLE3 if kind.kind is DraftKind.EAGLE3 else Method.EAGLE
    if s.method is wants or s.method in (Method.NGRAM, Method.OTHER):
        return []
    rows = rows_of(s)
    capture = pick(rows.AUX_CAPTURE, s.release) if hasattr(rows, "AUX_CAPTURE") else None
    evidence = [
        f"the draft is {kind.kind.value}: {kind.evidence}",
        f"the line runs {s.method.value}: {s.method_source}",
    ]
    if capture is not None and wants is Method.EAGLE3 and s.method not in capture.value:
        evidence.append(f"the target captures aux hidden states only for EAGLE3 ({capture.source})")
    what = {
        Method.EAGLE: "receives the target's final hidden state instead of its aux states: fc is "
        "bypassed or fails, accept length stays at 1.00",
        Method.EAGLE3: "is fed K aux hidden states its fc was not built for",
        Method.DRAFT_MODEL: "is run as an independent language model, which it is not",
        Method.MTP: "is run as an MTP head, which it is not",
    }[s.method]
    source = {
        "sglang": "sgl-project/sglang PR #21272",
        "vllm": "vllm-project/vllm-ascend issue #13665",
    }.get(s.engine)
    name = {"sglang": "--speculative-algorithm", "vllm": '"method"'}.get(s.engine, "the method")
    return [
        Finding(
            code="ALGORITHM_MISMATCH",
            severity=Severity.CRITICAL,
            title=f"{kind.kind.value} draft served as {s.method_text or s.method.value}: the "
            f"draft {what}",
            evidence=tuple(evidence),
            fix=f"set {name} to {'EAGLE3' if s.engine == 'sglang' else 'eagle3'}"
            if wants is Method.EAGLE3
            else f"set {name} to {'EAGLE' if s.engine == 'sglang' else 'eagle'}",
            engine=str(s.release),
            source=source,
            root_cause=True,
        )
    ]


def chain(s: Served, draft: DraftConfig | None) -> list[Finding]:
    """How many drafts a step proposes, in each engine's count, against the trained length."""
    if s.method not in (Method.EAGLE3, Method.EAGLE):
        return []
    out = _root_counted(s)
    trained = trained_unroll(draft)
    served = s.chain
    if not trained or not served or served <= trained:
        if trained and served and served == trained - 1 and s.num_draft_tokens == trained:
            out.append(_one_short(s, trained))
        return out
    return [*out, longer_than_trained(trained, served, _chain_text(s), _chain_fix(s, trained),
                                      str(s.release))]  # fmt: skip


def trained_unroll(draft: DraftConfig | None) -> int | None:
    """Draft tokens per step the draft was trained to propose, where its config records it: the
    speculators trainer writes its test-time-training unroll (`ttt_steps`) as the proposal's
    `speculative_tokens`; SpecForge, ModelOpt and the EAGLE trainer record none."""
    return draft.num_speculative_tokens if draft else None


def longer_than_trained(
    trained: int, served: int, how: str, fix: str, engine: str | None
) -> Finding:
    """CHAIN_LONGER_THAN_TRAINED: `served` drafts per step (read from `how`) against `trained`."""
    off_by_one = served == trained + 1
    evidence = [
        f"trained for {trained} draft tokens per step (speculators_config proposal_methods "
        "speculative_tokens, the trainer's test-time-training unroll)",
        f"served chain {served} ({how})",
    ]
    if off_by_one:
        evidence.append(
            "one more than trained: the root counted as a draft (SGLang's "
            "--speculative-num-draft-tokens counts the root, vLLM's num_speculative_tokens not)"
        )
    return Finding(
        code="CHAIN_LONGER_THAN_TRAINED",
        severity=Severity.WARNING,
        title=f"the chain proposes {served} drafts per step, the draft was trained for "
        f"{trained}: positions past {trained} are rarely accepted",
        evidence=tuple(evidence),
        fix=fix,
        engine=engine,
        source="vllm-project/vllm PR #16035" if off_by_one else None,
    )


def any_engine_fix(n: int) -> str:
    """The chain of `n` drafts in each engine's spelling (a chain read from logs, not a line)."""
    return (
        f'serve {n} drafts per step: vLLM "num_speculative_tokens": {n}; SGLang '
        f"--speculative-num-steps {n} --speculative-eagle-topk 1 --speculative-num-draft-tokens "
        f"{n + 1} (SGLang counts the root)"
    )


def _chain_text(s: Served) -> str:
    if s.engine == "vllm":
        return f"num_speculative_tokens {s.num_speculative_tokens}"
    return (
        f"--speculative-num-steps {s.num_steps}, --speculative-eagle-topk {s.topk}, "
        f"--speculative-num-draft-tokens {s.num_draft_tokens}"
    )


def _chain_fix(s: Served, n: int) -> str:
    if s.engine == "vllm":
        return f'"num_speculative_tokens": {n}'
    return (
        f"--speculative-num-steps {n} --speculative-eagle-topk 1 --speculative-num-draft-tokens "
        f"{n + 1} (SGLang counts the root)"
    )


def _one_short(s: Served, trained: int) -> Finding:
    return Finding(
        code="CHAIN_ROOT_MISCOUNTED",
        severity=Severity.INFO,
        title=f"--speculative-num-draft-tokens {trained} looks like vLLM's count of {trained} "
        f"drafts: SGLang counts the root, so this runs {trained - 1}",
        evidence=(
            f"trained for {trained} draft tokens per step",
            _chain_text(s),
        ),
        fix=_chain_fix(s, trained),
        engine=str(s.release),
        source="vllm-project/vllm PR #16035",
    )


def _root_counted(s: Served) -> list[Finding]:
    """SGLang with topk 1: the verified tokens are steps + 1 (the root and each step's draft)."""
    if s.engine != "sglang" or s.topk != 1 or not s.num_steps or not s.num_draft_tokens:
        return []
    if s.num_draft_tokens == s.num_steps + 1:
        return []
    row = pick(rows_of(s).TOPK1_DRAFT_TOKENS_FORCED, s.release)
    given = s.arguments.given.get("speculative_num_draft_tokens")
    if row.value:
        title = (
            f"--speculative-num-draft-tokens {s.num_draft_tokens} is replaced by steps + 1 = "
            f"{s.num_steps + 1}: with topk 1 the count includes the root"
        )
        severity = Severity.INFO
    else:
        title = (
            f"{s.num_draft_tokens} draft tokens for a {s.num_steps}-step chain: this release "
            f"uses the value as given, the chain verifies {s.num_steps + 1}"
        )
        severity = Severity.WARNING
    return [
        Finding(
            code="CHAIN_ROOT_MISCOUNTED",
            severity=severity,
            title=title,
            evidence=(_chain_text(s), f"{given.spelled if given else 'default'} ({row.source})"),
            fix=f"--speculative-num-draft-tokens {s.num_steps + 1} with --speculative-eagle-topk 1",
            engine=str(s.release),
            source="sgl-project/SpecForge issue #310",
        )
    ]


def known_issues(s: Served, multimodal_target: bool) -> list[Finding]:
    """Upstream reports that hold for this release and these settings, stated as such."""
    facts = set(s.facts) | ({"multimodal_target"} if multimodal_target else set())
    out = []
    for row in getattr(rows_of(s), "KNOWN_ISSUES", ()):
        issue = row.value
        if s.release not in row.versions or not set(issue.when) <= facts:
            continue
        out.append(
            Finding(
                code=issue.code,
                severity=Severity.INFO,
                title=f"known issue: {issue.title}",
                evidence=(
                    f"applies to {s.engine} {row.versions} with: {', '.join(issue.when)}",
                    "reported upstream; not something the kit measured on this deployment",
                ),
                fix=issue.fix,
                engine=str(s.release),
                source=row.source,
            )
        )
    return out


# SGLang verifies a drafted token d at a temperature by `coin < p(d) / threshold_acc or
# p(d) >= threshold_single` (0.5.23 kernels/jit/include/sgl_kernel/speculative/sampling.cuh:64-99;
# target-only since 0.4.4.post2 speculative/eagle_utils.py:357-380), both 1.0 by default
# (0.5.10 server_args.py:500-501): then d is accepted with the target's own p(d).
THRESHOLDS = ("speculative_accept_threshold_single", "speculative_accept_threshold_acc")


def loose_verification(s: Served) -> list[Finding]:
    """SGLang thresholds below 1.0: sampled requests accept drafted tokens the target would not
    have sampled, so the server's acceptance is inflated and its text no longer the target's
    distribution; the kit's offline figures assume the defaults."""
    if s.engine != "sglang":
        return []
    given = {d: s.arguments.value(d) for d in THRESHOLDS}
    loose = {d: v for d, v in given.items() if v is not None and float(v) < 1.0}
    if not loose:
        return []
    return [
        Finding(
            code="LAUNCH_LOOSE_VERIFICATION",
            severity=Severity.WARNING,
            title="acceptance thresholds below 1.0: at a temperature the server accepts drafted "
            "tokens its target would not have sampled",
            evidence=(
                *(f"--{d.replace('_', '-')} {v} (default 1.0)" for d, v in loose.items()),
                "accepted when coin < p(d) / threshold_acc or p(d) >= threshold_single: the "
                "accept length rises, the sampled text is no longer distributed as the target's",
                "greedy requests are verified exactly; the kit's offline figures assume 1.0",
            ),
            fix="leave both thresholds at 1.0 to judge the draft; compare logged acceptance with "
            "offline figures only at the defaults",
            engine=str(s.release),
            source="0.5.23 kernels/jit/include/sgl_kernel/speculative/sampling.cuh:64-99; "
            "0.5.10 server_args.py:500-501",
        )
    ]
