"""The public API: `import kit` is light, and each call the README shows works on the bundled
data and returns a report with findings and a JSON form, as the CLI and the notebooks use it."""

from __future__ import annotations

import json
import subprocess
import sys

from tiny_layouts import DATA

import kit

DRAFT, TARGET = DATA / "pair" / "draft", DATA / "pair" / "target"
KIMI = DATA / "incident" / "kimi-k2.5"


def test_import_kit_loads_no_heavy_library():
    code = "import kit, sys; print(sorted(m for m in ('torch', 'transformers', 'plotly') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_every_name_in_all_resolves():
    for name in kit.__all__:
        assert getattr(kit, name) is not None, name


def test_no_package_shadows_a_public_call():
    """Importing a subpackage sets it as an attribute of `kit`: one named like a call
    (`kit/trace/` beside `kit.trace`) would replace the call for everyone after the import."""
    code = (
        "import pkgutil, importlib, kit\n"
        "for m in pkgutil.walk_packages(kit.__path__, 'kit.'):\n"
        "    m.name.endswith('__main__') or importlib.import_module(m.name)\n"
        "print(sorted(n for n in kit.__all__ if not n.startswith('_') and n.islower() and not callable(getattr(kit, n))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_header_only_calls(tmp_path):
    assert kit.inspect(DRAFT, stats="none").format.name.startswith("speculators")
    report = kit.simulate(DRAFT, "sglang==0.5.10")
    assert isinstance(report, kit.LoadReport) and report.findings[0].code == "UNSUPPORTED_CONFIG"
    assert json.dumps(report.to_dict())
    rows = kit.release_matrix(DRAFT)
    assert {r.engine for r in rows} >= {"sglang", "vllm"}
    plan, written = kit.fix(DRAFT, "sglang==0.5.10", out=tmp_path / "fixed")
    assert plan.renames and written is not None
    assert kit.simulate(written, "sglang==0.5.10").loads_cleanly
    traced = kit.trace(KIMI / "draft", KIMI / "target", "sglang==0.5.10", aux_capture=False)
    assert isinstance(traced, kit.TraceReport) and not traced.fc_applied


def test_logs_doctor_and_deployment():
    logs = DATA / "incident" / "logs"
    report = kit.analyze_logs([logs / "before.log"], engine="sglang")
    assert "ZERO_ACCEPTANCE" in {f.code for f in report.findings}
    diagnosis = kit.doctor(DRAFT, target_config=TARGET, engine="vllm==0.11.2")
    assert isinstance(diagnosis, kit.Diagnosis) and diagnosis.root_causes == []
    deployment = kit.check_deployment(DATA / "incident" / "launch.sh", draft=KIMI / "draft")
    assert isinstance(deployment, kit.DeploymentReport)


def test_offline_healthy_and_as_deployed():
    from kit.offline_acceptance import load_prompts

    few = load_prompts(DATA / "pair" / "prompts.jsonl")[:6]
    row = kit.offline(TARGET, DRAFT, "vllm==0.11.2", k=3, prompts=few, progress=False)
    assert isinstance(row, kit.OfflineRow) and row.result.accept_len > 1.5
    assert row.vs_healthy is not None and not row.vs_healthy.beyond_noise
