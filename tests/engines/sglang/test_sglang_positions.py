"""SGLang's draft decode positions, release by release (`kit.engines.sglang.forward`).

Every release read has its own row citing, per worker, where its draft decode sets the positions
(`seq_lens`) and where it adds 1 against the step's forward: before it up to 0.5.11 (each step
after the first one RoPE position late), after it from 0.5.12 (sglang PR #25015). The lines
below were read in each release's wheel (`pip download --no-deps sglang==X`,
sglang/srt/speculative/); a row that moves fails here.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kit.engines import ENGINES, parse_engine
from kit.engines.sglang import RELEASES
from kit.engines.sglang.forward import DRAFT_POSITIONS, POSITIONS_FIX
from kit.tracing.positions import fixed_in, late_positions_finding

# release: (v1 eagle_worker.py add_(1), its forward; v2 eagle_worker_v2.py add_(1), its forward)
LINES: dict[str, tuple[tuple[int, int] | None, tuple[int, int] | None]] = {
    "0.4.4.post2": ((396, 401), None), "0.4.4.post3": ((396, 401), None),
    "0.4.4.post4": ((462, 467), None), "0.4.5": ((462, 467), None),
    "0.4.6.post1": ((458, 463), None), "0.4.7": ((531, 536), None),
    "0.4.8": ((617, 622), None), "0.4.9": ((619, 624), None),
    "0.4.9.post6": ((624, 629), None), "0.4.10": ((626, 631), None),
    "0.5.1": ((678, 683), None), "0.5.2": ((748, 753), None), "0.5.3": ((781, 786), None),
    "0.5.3.post1": ((779, 784), None), "0.5.3.post2": ((607, 612), (193, 198)),
    "0.5.3.post3": ((607, 612), (193, 198)), "0.5.4": ((593, 598), (350, 355)),
    "0.5.5": ((610, 615), (355, 360)), "0.5.6": ((638, 643), (384, 389)),
    "0.5.7": ((648, 653), (389, 394)), "0.5.8": ((656, 661), (421, 426)),
    "0.5.9": ((665, 670), (422, 427)), "0.5.10": ((675, 680), (443, 448)),
    "0.5.11": ((856, 861), (450, 455)), "0.5.12": ((923, 908), (481, 466)),
    "0.5.13": (None, (598, 573)), "0.5.14": (None, (681, 649)), "0.5.15": (None, (722, 690)),
    "0.5.16": (None, (675, 666)), "0.5.17": (None, (660, 651)), "0.5.18": (None, (670, 655)),
    "0.5.19": (None, (686, 671)), "0.5.20": (None, (772, 757)), "0.5.21": (None, (803, 787)),
    "0.5.22": (None, (816, 800)), "0.5.23": (None, (866, 847)),
}  # fmt: skip


def test_every_release_read_has_its_lines():
    assert set(LINES) == set(RELEASES)


@pytest.mark.parametrize("version", RELEASES)
def test_each_release_cites_its_own_lines(version):
    """The row in force names the lines of its release (0.4.4.post3 and 0.4.5 have the same
    lines as the release before them, which their row names); late exactly where the add_(1)
    comes before the step's forward."""
    row = ENGINES["sglang"].draft_positions(parse_engine(f"sglang=={version}"))
    v1, v2 = LINES[version]
    for worker, lines in (("eagle_worker.py", v1), ("eagle_worker_v2.py", v2)):
        if lines is None:
            assert f" {worker}:" not in row.source
            continue
        add, forward = lines
        when = "before" if add < forward else "after"
        assert f"{worker}:{add} add_(1) {when} the forward at :{forward}" in row.source
        assert row.value == (1 if add < forward else 0)
    assert (POSITIONS_FIX in row.source) == (row.value == 0)


def test_late_up_to_0_5_11_as_trained_from_0_5_12():
    """sglang PR #25015 (merged 2026-05-11) is in 0.5.12, not in 0.5.11 (built 2026-05-07)."""
    late = [r.versions.first for r in DRAFT_POSITIONS if r.value]
    assert late[0] == "0.4.4.post2" and DRAFT_POSITIONS[len(late)].versions.first == "0.5.12"
    assert all(r.value == 1 for r in DRAFT_POSITIONS[: len(late)])
    assert all(r.value == 0 for r in DRAFT_POSITIONS[len(late) :])
    # a release between two read ones follows the one before it: 0.5.10.post1 as 0.5.10
    assert ENGINES["sglang"].draft_positions(parse_engine("sglang==0.5.10.post1")).value == 1
    assert fixed_in(parse_engine("sglang==0.5.10"))[0] == parse_engine("sglang==0.5.12")


@pytest.mark.parametrize("release", ["vllm==0.32.0", "lmdeploy==0.18.0", "tensorrt_llm==1.2.0rc2"])
def test_an_engine_whose_rule_was_not_read_has_none(release):
    """Only SGLang's rule was read: the others keep their steps where trained, said nowhere."""
    assert ENGINES[release.split("==")[0]].draft_positions(parse_engine(release)) is None
    assert late_positions_finding(parse_engine(release)) is None


def test_the_finding_without_a_target_says_its_cost_is_unmeasured():
    late = late_positions_finding(parse_engine("sglang==0.5.10"))
    assert late.code == "DRAFT_POSITIONS_LATE" and late.severity.name == "INFO"
    assert "unmeasured" in late.title and "sglang==0.5.12" in late.fix
    assert "eagle_worker.py:675 add_(1) before" in late.source and POSITIONS_FIX in late.source
    assert not late.root_cause
    assert late_positions_finding(parse_engine("sglang==0.5.12")) is None


def test_the_release_matrix_says_which_releases_draft_late(capsys):
    """The specforge layout loads in every SGLang release; the matrix splits at 0.5.12, where
    the draft steps move to where trained, and names the late span once, unmeasured."""
    from kit.cli import main

    specforge = Path(__file__).resolve().parents[3] / "data" / "layouts" / "specforge"
    assert main(["simulate", str(specforge), "--engine", "sglang", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    spans = [(r["first"], r["last"], r["late_positions"]) for r in out["matrix"]]
    assert spans == [("0.4.4.post2", "0.4.8", 1), ("0.4.9", "0.5.11", 1), ("0.5.12", "0.5.23", 0)]
    (late,) = out["findings"]
    assert late["code"] == "DRAFT_POSITIONS_LATE" and late["severity"] == "info"
    assert late["title"].startswith("sglang 0.4.4.post2 … 0.5.11 draft one position late")
    assert "unmeasured" in late["title"]
    assert main(["simulate", str(specforge), "--engine", "sglang"]) == 0
    text = " ".join(capsys.readouterr().out.split())  # the finding's block, unwrapped
    assert "sglang 0.4.4.post2 … 0.5.11 draft one position late: its cost is unmeasured" in text


def test_a_release_whose_server_does_not_start_is_left_out_of_the_span(sample_dir):
    """The speculators sample crashes 0.4.4.post2-0.4.8 even once config.json is rewritten:
    the late span starts at 0.4.9. Engines whose rule was not read have no figure."""
    import kit
    from kit.load.replay import matrix_findings

    rows = kit.release_matrix(sample_dir)
    (late,) = matrix_findings(rows)
    assert late.title.startswith("sglang 0.4.9 … 0.5.11 draft one position late")
    assert {r.late_positions for r in rows if r.engine != "sglang"} == {None}
