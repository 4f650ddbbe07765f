"""The wheel carries what commands default to: the notebooks `run` executes and the bundled
incident (the trained pair, the Kimi-K2.5 configs, the server logs) it runs on by default.

They stay where a clone has them (`notebooks/`, `data/`: `make demo`, JupyterLab and the tests use
those paths) and are copied into the built package as `kit/_bundled/{notebooks,data}` with the
same layout, so `kit.report.notebook.ROOT` points at either one and the notebooks' relative paths
(`data/pair/draft`) mean the same in both. An editable install reads the checkout itself.
"""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).parent
# source (relative to the repository) -> what of it ships
BUNDLED = {
    "notebooks": ["[0-9][0-9]_*.py", "postmortem.py"],
    "data/pair": ["**/*"],
    # not the draft checkpoint a checkout may hold: 4.3 GB declared, written on first use
    "data/incident": ["**/*.json", "**/*.log", "**/*.md", "**/*.sh"],
}


class BuildWithBundle(build_py):
    """build_py, plus the notebooks and the bundled incident under kit/_bundled/."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return  # the checkout is the bundle
        dest_root = Path(self.build_lib) / "kit" / "_bundled"
        for source, patterns in BUNDLED.items():
            for pattern in patterns:
                for path in sorted((HERE / source).glob(pattern)):
                    if path.is_file() and "__pycache__" not in path.parts:
                        dest = dest_root / path.relative_to(HERE)
                        dest.parent.mkdir(parents=True, exist_ok=True)
                        shutil.copy2(path, dest)


setup(cmdclass={"build_py": BuildWithBundle})
