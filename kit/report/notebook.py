"""Notebooks as the kit sees them: where they live, how a run reads them, what their setup does.

The notebooks are jupytext percent scripts (`notebooks/NAME.py`, cells marked `# %%`): reviewed,
linted and formatted like any module, opened as notebooks by JupyterLab through jupytext's
contents manager, and executed by papermill from the notebook `read_script()` builds in memory,
so no generated `.ipynb` is committed or can drift from its script.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from kit.errors import KitError

if TYPE_CHECKING:
    import nbformat
    import plotly.graph_objects as go


def _root() -> Path:
    """The folder holding `notebooks/` and `data/`: the copy an installed wheel carries
    (`kit/_bundled/`, see setup.py), else the checkout this kit is imported from. Either way the
    notebooks' relative paths (`data/pair/draft`) resolve from it, in any working directory."""
    package = Path(__file__).resolve().parents[1]
    bundled = package / "_bundled"
    return bundled if bundled.is_dir() else package.parent


ROOT = _root()
NOTEBOOKS = ROOT / "notebooks"
SUFFIX = ".py"
HEADLESS = "EAGLE3_KIT_HEADLESS"  # set for the kernels of a headless run (`kit.report.runbook`)


def script_path(name: str, folder: Path = NOTEBOOKS) -> Path:
    """The percent script of the notebook `name` (e.g. `01_key_inspection`)."""
    return folder / f"{name}{SUFFIX}"


def read_script(path: Path) -> nbformat.NotebookNode:
    """The notebook a percent script describes, as papermill executes it.

    jupytext's own metadata is dropped: an executed copy is a plain notebook, paired with no
    script, so opening it in JupyterLab never writes over the source.
    """
    import jupytext

    try:
        nb = jupytext.read(path, fmt="py:percent")
    except OSError as e:
        raise KitError(f"cannot read the notebook script: {e.strerror}", path) from None
    nb.metadata.pop("jupytext", None)
    return nb


def setup() -> None:
    """What every notebook's first code cell does.

    The working directory becomes the repository root, so the paths in the parameters cell mean
    the same in JupyterLab as in a headless run. A `KitError` (a wrong path, a bad file: the
    user's input, not a bug) shows as one line naming the problem and the cell line that raised,
    instead of a traceback through the library ending in that line.
    """
    from IPython import get_ipython

    os.chdir(ROOT)
    shell = get_ipython()
    if shell is not None:
        shell.set_custom_exc((KitError,), _one_line)


def watched() -> bool:
    """Whether a person watches this kernel (JupyterLab), not a headless run: progress bars are
    widgets, which an executed copy could not draw without its kernel, so they show only then."""
    return not os.environ.get(HEADLESS)


def show(fig: go.Figure) -> None:
    """Display a figure: in a headless run, the bundle `fig.show()` gives there (its renderer is
    `plotly_mimetype`, `kit.report.runbook.kernel_env`), built by that same plotly renderer; in
    JupyterLab, VS Code or Colab, `fig.show()` itself, which picks the renderer for the front end.

    A headless kernel skips plotly's renderer registry: it imports nbformat only to check its
    version, and nbformat's jsonschema compiles rfc3987-syntax's IRI grammars at import
    (python-jsonschema/jsonschema#1428), about a second of every kernel of a run.
    """
    if watched():
        fig.show()
        return
    from IPython.display import display
    from plotly.io._base_renderers import PlotlyRenderer

    display(PlotlyRenderer().to_mimebundle(fig.to_dict()), raw=True)


def _one_line(
    shell: Any,
    etype: type[BaseException],
    value: BaseException,
    tb: TracebackType | None,
    tb_offset: int | None = None,
) -> list[str]:
    """IPython's custom exception hook: show `KitError: message (Cell In[N], line L)`.

    It is sent as the cell's error output, so the cell still fails: papermill stops the notebook
    there and reports the error by name and message, as for any other exception.
    """
    where = ""
    while tb is not None:  # the innermost frame that belongs to a notebook cell
        label = shell.compile.format_code_name(tb.tb_frame.f_code.co_filename)
        if label:
            where = f" ({' '.join(label)}, line {tb.tb_lineno})"
        tb = tb.tb_next
    stb = [f"\x1b[0;31m{etype.__name__}\x1b[0m: {value}{where}"]
    shell._showtraceback(etype, value, stb)  # what IPython's showtraceback sends, one line only
    return stb
