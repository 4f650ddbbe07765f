"""The deployment rules a draft and a target config decide: vocabulary, RoPE, context, sliding
window, dtype, quantization and multimodal positions.

They run from the two configs alone (`doctor --draft D --target-config T`); a release, when known,
says what the engine makes of a difference (its version-ranged rows in
`kit/engines/<engine>/serving.py`), and a launch line adds what it serves (context, dtype,
quantization).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from kit.checkpoint.config import DraftConfig, Rope, TargetConfig, read_rope
from kit.deployment.served import Served
from kit.deployment.targets import target_findings
from kit.engines import EngineRelease, Row, pick
from kit.engines.serving import DraftDtype, Positions, SlidingWindow
from kit.findings import Finding, Severity


@dataclass(frozen=True)
class Pair:
    """A draft, the target it serves with, and (when known) the release and the served line."""

    draft: DraftConfig
    target: TargetConfig
    release: EngineRelease | None = None
    served: Served | None = None

    @property
    def draft_layer(self) -> dict[str, Any]:
        layer = self.draft.raw.get("transformer_layer_config")
        return layer if isinstance(layer, dict) else self.draft.raw

    @property
    def draft_prefix(self) -> str:
        return "transformer_layer_config." if self.draft.source == "speculators" else ""

    @property
    def target_text(self) -> dict[str, Any]:
        key = self.target.text_config_key
        return self.target.raw[key] if key else self.target.raw

    def row(self, table: str) -> Row[Any] | None:
        """The row in force for the release in one of its engine's serving tables
        (`kit/engines/<engine>/serving.py`); None without a release or such a table."""
        module = _serving(self.release) if self.release else None
        rows = getattr(module, table, None)
        return pick(rows, self.release) if rows and self.release else None

    def fact(self, name: str) -> Any:
        """A constant of the engine's serving module (a flag or environment name)."""
        return getattr(_serving(self.release), name, None) if self.release else None

    def cite(self) -> str | None:
        return str(self.release) if self.release else None


def _serving(release: EngineRelease) -> ModuleType | None:
    try:
        return importlib.import_module(f"kit.engines.{release.name}.serving")
    except ModuleNotFoundError:
        return None


def config_findings(pair: Pair) -> list[Finding]:
    """Every config rule, in the order a reader would check them."""
    rules: tuple[Callable[[Pair], list[Finding]], ...] = (
        vocabulary,
        rope,
        context,
        sliding_window,
        dtype,
        quantization,
        positions,
        target_findings,
    )
    return [f for rule in rules for f in rule(pair)]


def _where(cfg: DraftConfig | TargetConfig, what: str) -> str:
    return f"{what} ({cfg.path})" if cfg.path else what


def vocabulary(p: Pair) -> list[Finding]:
    """A draft is trained on one target's token ids: a target with another vocabulary size is a
    sign of another tokenizer (or of another padding of the same one, which is harmless)."""
    if p.target.vocab_size == p.draft.vocab_size:
        return []
    return [
        Finding(
            code="VOCAB_MISMATCH",
            severity=Severity.WARNING,
            title=f"the draft's config names a {p.draft.vocab_size}-token vocabulary, the target "
            f"{p.target.vocab_size}",
            evidence=(
                _where(p.draft, f"draft vocab_size {p.draft.vocab_size}"),
                _where(p.target, f"target vocab_size {p.target.vocab_size}"),
                "ids the draft proposes mean the tokens of the tokenizer it was trained with",
            ),
            fix="serve the draft with the target it was trained on; a vocabulary padded "
            "differently for the same tokenizer is harmless",
        )
    ]


def _as_read(rope_cfg: Rope, p: Pair) -> tuple[Rope, str | None]:
    """The draft's RoPE as the release reads it: a release built on transformers 4 does not read
    transformers 5's `rope_parameters` and falls back to theta 10000 and no scaling."""
    if p.release is None or not rope_cfg.v5_only:
        return rope_cfg, None
    from kit.engines import ENGINES

    flags = getattr(ENGINES[p.release.name], "flags", None)
    table = flags.table() if flags else None
    if table is None or table.reads_transformers5(p.release) is not False:
        return rope_cfg, None
    pin = table.read_in(p.release)
    why = (
        f"{p.release} requires transformers {pin.transformers if pin else '<5'} (its wheel's "
        "Requires-Dist), which does not read rope_parameters (transformers 5's spelling): the "
        "draft gets theta 10000 and no scaling"
    )
    return Rope(10000.0, None, None, None, rope_cfg.mrope, True), why


def rope(p: Pair) -> list[Finding]:
    """The draft attends with the target's positions: theta and scaling must be the same."""
    written = read_rope(p.draft_layer, p.draft_prefix)
    draft, why = _as_read(written, p)
    target = read_rope(p.target_text)
    out = []
    d_theta, t_theta = draft.theta or 10000.0, target.theta or 10000.0
    if d_theta != t_theta:
        evidence = [
            f"draft rope_theta {d_theta:g} ({draft.theta_key or written.theta_key or 'default'})",
            f"target rope_theta {t_theta:g} ({target.theta_key or 'default'})",
        ]
        out.append(
            Finding(
                code="ROPE_THETA_MISMATCH",
                severity=Severity.WARNING,
                title=f"the draft rotates positions with theta {d_theta:g}, the target with "
                f"{t_theta:g}",
                evidence=tuple(evidence + ([why] if why else [])),
                fix="write the target's rope_theta into the draft config, in the spelling the "
                "serving release reads (rope_theta for transformers 4, rope_parameters for 5)",
                engine=p.cite(),
                source="wejoncy/sfllm PR #32" if why else None,
            )
        )
    if draft.scaling != target.scaling:
        injected = _injected_yarn(draft, target, p)
        out.append(injected or _scaling_finding(draft, target, why, p))
    return out


def _injected_yarn(draft: Rope, target: Rope, p: Pair) -> Finding | None:
    """ModelOpt trains with plain RoPE and writes YaRN into the export (0.47.0
    `torch/speculative/config.py:380-381` `eagle_export_rope_scaling`, applied when training used
    `rope_type: default`, `torch/export/plugins/hf_spec_export.py:213-218`): the served draft
    rotates with scaled frequencies and a larger attention temperature from position 0, and
    positions past `original_max_position_embeddings` were never trained at all."""
    from kit.checkpoint.formats import MODELOPT_EAGLE_FIELDS

    scaling = draft.scaling or {}
    modelopt = bool(set(p.draft.eagle_config) & MODELOPT_EAGLE_FIELDS)
    if target.scaling or scaling.get("rope_type") != "yarn" or not modelopt:
        return None
    original, factor = scaling.get("original_max_position_embeddings"), scaling.get("factor")
    ctx, ctx_from = _served_context(p)
    evidence = [
        f"draft {draft.scaling_key or 'rope_scaling'}: {scaling}; the target scales nothing",
        "ModelOpt trained this draft with plain RoPE and injected the YaRN at export "
        "(eagle_export_rope_scaling)",
    ]
    if ctx is not None and original:
        reach = f"{int(original * factor)}" if factor else "?"
        inside = ctx <= original
        evidence.append(
            f"served context {ctx} ({ctx_from}) is "
            + (f"within the {original} positions of the YaRN's original window: nothing to "
               "extend, but the draft still attends with other rotations and a sharper softmax "
               "than it was trained with" if inside else
               f"past the original {original} (YaRN reaches {reach}): positions the draft never "
               "saw in training")
        )  # fmt: skip
    return Finding(
        code="ROPE_SCALING_MISMATCH",
        severity=Severity.WARNING,
        title="the draft config applies YaRN that ModelOpt injected at export; the draft was "
        "trained with plain RoPE",
        evidence=tuple(evidence),
        fix="to serve the draft as it was trained, drop rope_scaling from its config.json (or "
        "export with eagle_export_rope_scaling={}); keep it only to serve past the context the "
        "draft was trained on, and measure acceptance there",
        engine=p.cite(),
        source="nvidia-modelopt 0.47.0 torch/export/plugins/hf_spec_export.py:213-218; "
        "NVIDIA/Model-Optimizer PR #1238",
    )


def _scaling_finding(draft: Rope, target: Rope, why: str | None, p: Pair) -> Finding:
    if target.scaling and not draft.scaling:
        title = f"the target scales RoPE ({target.scaling.get('rope_type')}), the draft config not"
        source = "vllm-project/speculators PR #574 (a converter that dropped rope_scaling)"
    elif draft.scaling and (draft.scaling.get("rope_type") == "yarn") and not target.scaling:
        title = "the draft config applies YaRN the target does not"
        source = "NVIDIA/Model-Optimizer PR #1238 (an export that injects YaRN)"
    else:
        title = "the draft and the target scale RoPE differently"
        source = None
    return Finding(
        code="ROPE_SCALING_MISMATCH",
        severity=Severity.WARNING,
        title=title,
        evidence=(
            f"draft {draft.scaling_key or 'rope_scaling'}: {draft.scaling}",
            f"target {target.scaling_key or 'rope_scaling'}: {target.scaling}",
            *([why] if why else []),
        ),
        fix="give the draft config the RoPE scaling it was trained with, which for EAGLE-3 is "
        "the target's",
        engine=p.cite(),
        source=source,
    )


def _served_context(p: Pair) -> tuple[int | None, str]:
    if p.served and p.served.context and p.served.context > 0:
        return p.served.context, f"{p.served.context_flag} {p.served.context}"
    value = p.target_text.get("max_position_embeddings")
    return (int(value), f"the target's max_position_embeddings {value}") if value else (None, "")


def context(p: Pair) -> list[Finding]:
    """A draft trained on short contexts, served on long ones (sglang issue #6783)."""
    draft_max = p.draft.max_position_embeddings
    ctx, ctx_from = _served_context(p)
    if ctx is None or ctx <= draft_max:
        return []
    evidence = [
        f"draft max_position_embeddings {draft_max}",
        f"served context {ctx} ({ctx_from})",
    ]
    severity, title, source = (
        Severity.WARNING,
        f"the draft was built for {draft_max} positions, the deployment serves {ctx}: past "
        f"{draft_max} tokens its predictions are out of what it learned",
        "sgl-project/sglang issue #6783",
    )
    raised, refused = p.row("DRAFT_ROPE_RAISED"), p.row("CONTEXT_REFUSED")
    if raised is not None:
        if not raised.value:
            severity, source = Severity.ERROR, raised.source
            title = (
                f"positions past {draft_max} fall outside the draft's RoPE cache in this "
                "release: a device assert under torch.compile, silent garbage with --enforce-eager"
            )
        else:
            evidence.append(f"the release raises the draft's RoPE cache to {ctx} ({raised.source})")
    elif refused is not None and p.served and p.served.context_flag:
        env_name = p.fact("CONTEXT_ENV")
        if refused.value and p.served.command.env.get(env_name) != "1":
            severity, source = Severity.ERROR, refused.source
            title = (
                f"{p.served.context_flag} {ctx} is above the draft's {draft_max}: the server "
                f"refuses to start unless {env_name}=1"
            )
    return [
        Finding(
            code="DRAFT_CONTEXT_SHORT",
            severity=severity,
            title=title,
            evidence=tuple(evidence),
            fix=f"serve at most {draft_max} tokens of context, or use a draft trained on the "
            "served length (its max_position_embeddings should match what it was trained on)",
            engine=p.cite(),
            source=source,
        )
    ]


def _draft_window(p: Pair) -> tuple[int | None, str]:
    layer = p.draft_layer
    window = layer.get("sliding_window")
    types = layer.get("layer_types") or []
    if isinstance(window, int) and "sliding_attention" in types:
        return window, f"layer_types {types}, sliding_window {window}"
    if isinstance(window, int) and layer.get("use_sliding_window"):
        return window, f"use_sliding_window, sliding_window {window}"
    return None, ""


def sliding_window(p: Pair) -> list[Finding]:
    """A draft trained with sliding-window attention, served with full attention (speculators
    PR #684: 2.30 at 2k context, 1.08 at 20k)."""
    window, how = _draft_window(p)
    qwen3 = "qwen3" in str(p.draft_layer.get("model_type", ""))
    row = p.row("SLIDING_QWEN3" if qwen3 else "SLIDING_LLAMA") or p.row("SLIDING")
    if window is None or row is None or p.release is None:
        return []
    ctx, ctx_from = _served_context(p)
    if ctx is not None and ctx <= window:
        return []
    flag = p.fact("SLIDING_FLAG")
    flag_given = bool(p.served and flag and p.served.arguments.value(flag) is not None)
    if row.value is SlidingWindow.FLAG_ONLY and flag_given:
        return []
    if row.value is SlidingWindow.HONOURED:
        return []
    return [
        Finding(
            code="DRAFT_SLIDING_WINDOW_IGNORED",
            severity=Severity.WARNING,
            title=f"the draft was trained with a {window}-token sliding window; this release "
            f"attends over the full context ({row.value})",
            evidence=(f"draft {how}", f"served context {ctx} ({ctx_from})" if ctx else how),
            fix="serve with a release that applies the draft's window, or set it on the launch "
            "line where the release has a flag for it (sglang --speculative-draft-window-size)",
            engine=str(p.release),
            source=f"{row.source}; vllm-project/speculators PR #684",
        )
    ]


def _dtype_of(cfg: dict[str, Any]) -> str | None:
    value = cfg.get("dtype") or cfg.get("torch_dtype")
    return str(value).replace("torch.", "") if value else None


_HALF = {"float16", "half"}


def dtype(p: Pair) -> list[Finding]:
    """bf16 values read as fp16 overflow past 65504 (tanishqkumar/ssd PR #18: a bf16 draft read
    as fp16 pushed the fc input norm from 31 to 479)."""
    draft_dtype = p.draft.dtype and str(p.draft.dtype).replace("torch.", "")
    target_dtype = _dtype_of(p.target_text) or _dtype_of(p.target.raw)
    served = p.served.dtype if p.served and p.served.dtype not in (None, "auto") else None
    rule = p.row("DRAFT_DTYPE")
    if served:
        runs = served
    elif rule and rule.value is DraftDtype.TARGET:
        runs = target_dtype
    else:
        runs = draft_dtype
    bf16 = "bfloat16" in (draft_dtype, target_dtype)
    if not (bf16 and runs in _HALF):
        return []
    return [
        Finding(
            code="DTYPE_HALF_RANGE",
            severity=Severity.WARNING,
            title="bfloat16 weights or hidden states reach a draft running in float16, whose "
            "range ends at 65504",
            evidence=(
                f"draft config dtype {draft_dtype}",
                f"target config dtype {target_dtype}",
                f"served --dtype {(p.served.dtype if p.served else None) or 'not given'}",
                f"the draft runs in {runs}" + (f" ({rule.value}; {rule.source})" if rule else ""),
            ),
            fix="serve in bfloat16 (--dtype bfloat16), the dtype the draft was trained in",
            engine=p.cite(),
            source="tanishqkumar/ssd PR #18",
        )
    ]


def quantization(p: Pair) -> list[Finding]:
    """A draft learns from the hidden states it was trained on: usually the unquantized target's
    (vllm issue #9534, vllm-ascend issue #5974)."""
    qcfg = p.target.raw.get("quantization_config") or p.target_text.get("quantization_config")
    served = p.served.quantization if p.served else None
    if not qcfg and not served:
        return []
    evidence = []
    if isinstance(qcfg, dict):
        method = qcfg.get("quant_method") or qcfg.get("quant_algo") or "?"
        evidence.append(_where(p.target, f"target quantization_config quant_method {method}"))
    if served:
        evidence.append(f"served --quantization {served}")
    evidence.append(
        "the draft's fc reads the quantized target's hidden states; drafts trained on the "
        "unquantized model accept less, down to none"
    )
    return [
        Finding(
            code="QUANTIZED_TARGET",
            severity=Severity.WARNING,
            title="the target runs quantized; the draft was most likely trained on unquantized "
            "hidden states",
            evidence=tuple(evidence),
            fix="compare the accept length with the unquantized target; if it drops, train or "
            "fine-tune the draft on the quantized target's hidden states",
            engine=p.cite(),
            source="vllm-project/vllm issue #9534; vllm-project/vllm-ascend issue #5974",
        )
    ]


def positions(p: Pair) -> list[Finding]:
    """A multimodal target with mrope: the draft must see the same positions (sglang PR #8801)."""
    target = read_rope(p.target_text)
    row = p.row("POSITIONS")
    if not target.mrope or row is None:
        return []
    draft_mrope = read_rope(p.draft_layer, p.draft_prefix).mrope
    reads_mrope = row.value is Positions.IF_TARGET_MROPE or (
        row.value is Positions.IF_DRAFT_MROPE and draft_mrope
    )
    if reads_mrope:
        return []
    return [
        Finding(
            code="MROPE_POSITIONS_MISSING",
            severity=Severity.WARNING,
            title="the target places tokens with multimodal RoPE, the draft with 1-D positions: "
            "after an image the two disagree",
            evidence=(
                "target rope_scaling has mrope_section",
                f"draft config mrope_section: {'yes' if draft_mrope else 'no'}",
                f"this release: {row.value}",
            ),
            fix="give the draft config the target's rope_scaling (with mrope_section), on a "
            "release whose draft reads mrope positions",
            engine=str(p.release),
            source=f"{row.source}; sgl-project/sglang PR #8801",
        )
    ]
