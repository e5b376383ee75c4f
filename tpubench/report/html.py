"""`tpubench report --html`: the Markdown report as one self-contained HTML page.

The tables are the report's own Markdown converted by the `markdown` package (its `tables`
extension); every PNG plot the report wrote is inlined as a `data:image/png;base64` URI, so the
one file can be mailed, attached to a bug or opened from a bucket without the PNGs beside it.
No script, no external stylesheet or font: a browser renders it offline.
"""

from __future__ import annotations

import base64
import html
import pathlib

import markdown

HTML_NAME = "report.html"

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1200px; color: #222; }
table { border-collapse: collapse; margin: 1em 0; font-size: 0.9em; }
th, td { border: 1px solid #999; padding: 0.3em 0.6em; text-align: left; }
th { background: #e8eef7; }
tr:nth-child(even) td { background: #f6f6f6; }
figure { margin: 1.5em 0; }
figure img { max-width: 100%; border: 1px solid #ccc; }
figcaption { font-size: 0.85em; color: #555; }
code { background: #f2f2f2; padding: 0 0.2em; }
"""


def png_data_uri(path: pathlib.Path) -> str:
    """A PNG file as a `data:` URI."""
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def render(report_markdown: str, plots: list[pathlib.Path], title: str) -> str:
    """The page: the report's tables, then every plot inlined with its file name as caption."""
    body = markdown.markdown(report_markdown, extensions=["tables"], output_format="html")
    figures = "".join(
        f'<figure><img alt="{html.escape(p.stem)}" src="{png_data_uri(p)}">'
        f"<figcaption>{html.escape(p.name)}</figcaption></figure>\n"
        for p in plots)
    section = f"<h2>Plots</h2>\n{figures}" if figures else ""
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title><style>{_STYLE}</style></head>\n"
            f"<body>\n{body}\n{section}</body></html>\n")


def write(out: pathlib.Path, report_markdown: str, plots: list[pathlib.Path],
          title: str) -> pathlib.Path:
    """Write `out/report.html`; returns its path."""
    path = out / HTML_NAME
    path.write_text(render(report_markdown, plots, title), encoding="utf-8")
    return path
