"""The deployment rules a launch line's parallelism decides: which aux states survive pipeline
stages, and whether the draft's embedding matches the target's tensor-parallel shard.

Each rule reads its engine's version-ranged rows (`kit/engines/<engine>/serving.py`) and cites
the row's source; a release the rows do not cover says nothing.
"""

from __future__ import annotations

from kit.checkpoint.config import TargetConfig
from kit.deployment.served import Served
from kit.deployment.serving import rows_of
from kit.engines import pick
from kit.engines.serving import Method
from kit.findings import Finding, Severity

_TRUE = {"1", "true", "True", "yes"}


def parallel_findings(s: Served, target: TargetConfig | None) -> list[Finding]:
    return [*pipeline_aux(s), *gemma_embedding(s, target)]


def pipeline_aux(s: Served) -> list[Finding]:
    """EAGLE-3 under pipeline parallelism: the aux layers sit on several stages, the draft on
    the last one. Where the release does not carry them over, the draft gets fewer states than
    its fc takes: a start-up failure in vLLM, a silent short concatenation in SGLang."""
    rows = getattr(rows_of(s), "PP_AUX_CAPTURE", None)
    if s.method is not Method.EAGLE3 or s.pipeline_parallel <= 1 or rows is None:
        return []
    row = pick(rows, s.release)
    relayed = row.value
    env = s.command.env.get("VLLM_USE_V2_MODEL_RUNNER")
    v1_forced = s.engine == "vllm" and env is not None and env not in _TRUE
    if relayed is None or (relayed and not v1_forced):
        return []
    evidence = [
        f"pipeline parallel size {s.pipeline_parallel}: the target's layers are split over "
        f"{s.pipeline_parallel} stages, the draft runs on the last",
        "the default aux layers (2, n//2, n-3) lie on different stages",
    ]
    if relayed and v1_forced:
        evidence.append(
            f"VLLM_USE_V2_MODEL_RUNNER={env}: the V1 runner, which does not relay them, is forced"
        )
    what = {
        "sglang": "only the aux layers of the last stage are captured: the draft's fc gets a "
        "shorter concatenation than it was trained on (a matmul error, or fc bypassed when one "
        "state of the draft's width is left)",
        "vllm": "aux states captured on earlier stages are dropped at the stage boundary: "
        "combine_hidden_states gets fewer states than fc takes and the server fails",
    }[s.engine]
    fix = {
        "sglang": "serve EAGLE-3 with --pp-size 1 (use tensor parallelism instead)",
        "vllm": "serve EAGLE-3 with --pipeline-parallel-size 1, or from vllm 0.30.0 on the V2 "
        "model runner (leave VLLM_USE_V2_MODEL_RUNNER unset)",
    }[s.engine]
    return [
        Finding(
            code="PIPELINE_AUX_STATES_DROPPED",
            severity=Severity.ERROR,
            title=f"EAGLE-3 with pipeline parallelism in {s.release}: {what}",
            evidence=tuple(evidence),
            fix=fix,
            engine=str(s.release),
            source=row.source,
            root_cause=s.engine == "sglang",  # vLLM fails loudly; SGLang serves at the floor
        )
    ]


def gemma_embedding(s: Served, target: TargetConfig | None) -> list[Finding]:
    """A Gemma 3/4 target at TP > 1 on a release whose draft takes the target's unsharded
    embedding table as if it were its own shard."""
    module = rows_of(s)
    rows, types = getattr(module, "GEMMA_EMBED_SHARDED", None), getattr(module, "GEMMA_TYPES", ())
    if s.method is not Method.EAGLE3 or s.tensor_parallel <= 1 or rows is None or target is None:
        return []
    model_types = {target.model_type, str(target.raw.get("model_type", ""))}
    if target.text_config_key:
        model_types.add(str(target.raw[target.text_config_key].get("model_type", "")))
    gemma = sorted(model_types & set(types))
    row = pick(rows, s.release)
    if not gemma or row.value:
        return []
    return [
        Finding(
            code="GEMMA_EMBEDDING_NOT_SHARDED",
            severity=Severity.ERROR,
            title=f"a Gemma target at tensor parallel {s.tensor_parallel}: the draft's "
            "vocab-parallel embedding gets the target's whole table, not its rank's shard",
            evidence=(
                f"target model_type {gemma[0]}: its embedding is an unsharded nn.Embedding",
                f"--tp {s.tensor_parallel}: every rank but the first looks tokens up in the "
                "wrong rows",
            ),
            fix="serve with sglang 0.5.12 or later (it shards the table for the draft), or at "
            "--tp 1",
            engine=str(s.release),
            source=row.source,
            root_cause=True,
        )
    ]
