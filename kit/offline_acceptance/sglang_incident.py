"""The incident, on the real engine: SGLang 0.5.10 serving the bundled pair's draft as the incident
served it, on a CPU, then the kit's verdict on that same run, then the engine after the fixes.

    python -m kit.offline_acceptance.sglang_incident [--out DIR]     (make incident-sglang)

The draft is the bundled one in the incident's state: the config SGLang reads (what `kit fix`
writes) with aux capture turned off in it, and the decoder's tensors under the names the trainer
saved (`layers.0.*`), which 0.5.10's loader drops without a word. Three servers, on the bundled
prompts, 4 draft steps and 5 draft tokens as the incident ran, in bfloat16:

  1. the incident's draft: SGLang's own decode lines (`accept len: 1.00, accept rate: 0.20`);
  2. `doctor` on that draft and that log: the kit's verdict, root causes first;
  3. the draft after `kit fix` (the decoder renamed, loaded), then with aux capture on too.

Everything lands in `--out`: the drafts, each server's log, and `incident.json` (what was shown,
for the postmortem to link). Exit 0 when SGLang printed the incident's line and the kit named
the two faults; 1 when it did not.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

RELEASE = "sglang==0.5.10"
STEPS, DTYPE = 4, "bfloat16"
INCIDENT_LINE = "accept len: 1.00, accept rate: 0.20"
FAULTS = ("KEYS_SILENTLY_DROPPED", "FC_BYPASSED")  # the decoder never written; fc bypassed


def bundled() -> tuple[Path, Path]:
    """(target, draft) of the bundled pair."""
    from kit.report.notebook import ROOT

    return ROOT / "data" / "pair" / "target", ROOT / "data" / "pair" / "draft"


def set_aux_capture(draft: Path, on: bool) -> Path:
    cfg = json.loads((draft / "config.json").read_text())
    cfg.setdefault("eagle_config", {})["use_aux_hidden_state"] = on
    (draft / "config.json").write_text(json.dumps(cfg, indent=2))
    return draft


def incident_draft(out: Path) -> Path:
    """The bundled draft as the incident served it (module doc)."""
    import kit

    _, draft = bundled()
    kit.fix(draft, RELEASE, out=out)
    shutil.copy2(draft / "model.safetensors", out / "model.safetensors")  # layers.0.* again
    return set_aux_capture(out, on=False)


def serve(draft: Path, log: Path, python: str) -> dict:
    """One server on `draft`; SGLang's own decode lines and its counts."""
    from kit.offline_acceptance.sglang_backend import EngineSettings, measure, start

    target, _ = bundled()
    settings = EngineSettings(python=python, engine_dtype=DTYPE, engine_log=log)
    with start(target, draft, STEPS, 0, settings) as engine:
        result = measure(engine, target, None, None, k=STEPS, progress=False)
    lines = [
        line.split("] ", 1)[-1] for line in log.read_text().splitlines() if "accept len" in line
    ]
    return {
        "draft": str(draft),
        "log": str(log),
        "decode_lines": lines,
        "verify_steps": result.verify_steps,
        "accepted": result.accepted,
        "accept_len": round(result.accept_len, 4),
    }


def verdict(draft: Path, log: Path) -> list[dict]:
    import kit

    target, _ = bundled()
    report = kit.doctor(draft, engine=RELEASE, logs=[log], target_config=target / "config.json")
    return [{"code": f.code, "title": f.title} for f in report.root_causes]


def reproduce(out: Path, python: str = sys.executable) -> dict:
    """Write the drafts, run the three servers (two at a time), and the verdict."""
    import kit

    out.mkdir(parents=True, exist_ok=True)
    drafts = {"incident": incident_draft(out / "incident-draft")}
    fixed = out / "fixed-draft"
    kit.fix(drafts["incident"], RELEASE, out=fixed)
    drafts["after kit fix"] = fixed
    on = out / "fixed-aux-on-draft"
    shutil.copytree(fixed, on)
    drafts["after kit fix, aux capture on"] = set_aux_capture(on, on=True)
    logs = {name: out / f"{d.name.removesuffix('-draft')}.log" for name, d in drafts.items()}
    with ThreadPoolExecutor(2) as pool:
        served = {n: pool.submit(serve, d, logs[n], python) for n, d in drafts.items()}
        runs = {n: f.result() for n, f in served.items()}
    found = verdict(drafts["incident"], logs["incident"])
    return {
        "engine": RELEASE,
        "device": "cpu, the kit's stand-ins (kit/engines/sglang/cpu)",
        "dtype": DTYPE,
        "speculative_num_steps": STEPS,
        "speculative_num_draft_tokens": STEPS + 1,
        "runs": runs,
        "verdict": found,
        "reproduced": INCIDENT_LINE in " ".join(runs["incident"]["decode_lines"])
        and all(code in [f["code"] for f in found] for code in FAULTS),
    }


def show(result: dict) -> None:
    incident = result["runs"]["incident"]
    print(f"1. {result['engine']} serving the incident's draft ({incident['log']}):")
    for line in incident["decode_lines"]:
        print(f"   {line}")
    print("2. python -m kit doctor on that draft and that log, root causes first:")
    for f in result["verdict"]:
        print(f"   {f['code']}: {f['title']}")
    print("3. the same server after the fixes:")
    for name in ("after kit fix", "after kit fix, aux capture on"):
        r = result["runs"][name]
        print(f"   {name}: accept len {r['accept_len']:.2f} ({r['verify_steps']} verify steps)")
        for line in r["decode_lines"][-1:]:
            print(f"     its last decode line: {line}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("runs/incident-sglang"))
    args = parser.parse_args(argv)
    from kit.errors import KitError
    from kit.offline_acceptance.sglang_backend import installed_release

    try:
        if installed_release() != RELEASE:
            raise KitError(f"the incident ran on {RELEASE}; this Python has {installed_release()}")
        result = reproduce(args.out)
    except KitError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    (args.out / "incident.json").write_text(json.dumps(result, indent=2) + "\n")
    show(result)
    print(f"written: {args.out / 'incident.json'}")
    return 0 if result["reproduced"] else 1


if __name__ == "__main__":
    sys.exit(main())
