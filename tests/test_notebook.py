"""The quickstart notebook runs headless from top to bottom (so it never rots)."""

import os

import nbformat
import runs
from nbclient import NotebookClient


def test_quickstart_notebook_trains_the_mini_to_target_and_plots(tmp_path):
    nb = nbformat.read(runs.REPO / "notebooks" / "quickstart.ipynb", as_version=4)
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                      for o in c.get("outputs", []))
    assert "'status': 'success'" in outputs
    assert "compliance: VALID" in outputs
    plot = next(line.split("plot: ", 1)[1] for line in outputs.splitlines()
                if line.startswith("plot: "))
    assert os.path.getsize(plot) > 10_000  # a real PNG figure, not an empty file
