"""Mutated launch lines through check_deployment and doctor.

The seed is the incident's launch script; a case makes flag values hostile, drops or repeats
tokens, breaks the bytes, or passes JSON nested thousands deep to a JSON flag.
"""

from __future__ import annotations

import shlex

from fuzz_inputs import HUGE_NUMBERS, LAUNCH, RELEASES, Fence, deep_text, flip_bytes, survives
from hypothesis import given
from hypothesis import strategies as st

import kit

TOKENS = shlex.split(LAUNCH.read_text(), comments=True)
VALUES = st.one_of(
    st.sampled_from(HUGE_NUMBERS),
    st.sampled_from(['{"num_speculative_tokens": 1e999}', "'unbalanced", '"', "\\", "--", "-"]),
    st.integers(10, 5000).map(deep_text),
    st.text(max_size=20),
)
FLAGS = st.sampled_from(["--speculative-config", "--speculative-num-steps", "--tp-size",
                         "--speculative-eagle-topk", "--unknown-flag", "--model", "-O"])  # fmt: skip


@st.composite
def launch_line(draw: st.DrawFn) -> bytes:
    tokens = list(TOKENS)
    for _ in range(draw(st.integers(1, 4))):
        how = draw(st.sampled_from(["value", "drop", "repeat", "add"]))
        i = draw(st.integers(0, len(tokens) - 1))
        if how == "value":
            tokens[i] = draw(VALUES)
        elif how == "drop":
            del tokens[i]
        elif how == "repeat":
            tokens[i:i] = tokens[i : i + 2] * draw(st.integers(1, 20))
        else:
            tokens[i:i] = [draw(FLAGS), draw(VALUES)]
        if not tokens:
            tokens = ["python"]
    raw = " ".join(shlex.quote(t) for t in tokens).encode("utf-8", "surrogatepass")
    if draw(st.booleans()):
        raw = flip_bytes(raw, draw(st.lists(st.tuples(st.integers(0, 4096), st.integers(0, 255)),
                                            max_size=4)))  # fmt: skip
    return raw


@given(launch_line(), st.sampled_from(RELEASES))
def test_mutated_launch_lines_are_read_or_refused_in_one_line(line: bytes, engine: str):
    with Fence() as fence:
        script = fence.inside / "launch.sh"
        script.write_bytes(line)
        survives(kit.check_deployment, script)
        survives(kit.check_deployment, script, engine=engine)
        survives(kit.doctor, launch=script, engine=engine)
