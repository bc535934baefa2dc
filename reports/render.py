"""Render the Markdown report from prepared tables (Jinja2)."""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from ..core import atomic_write_text, redact_secrets
from .blocks import markdown_table

TEMPLATES = Path(__file__).parent / "templates"


def render_report(data: dict[str, Any]) -> str:
    """Fill ``report.md.j2`` with ``data``; jinja2.UndefinedError names a missing key.

    Args:
        data: header, narrative, sections (each :meth:`~.blocks.Section.to_dict`), limitations, failures, warnings.

    Returns:
        The Markdown text.
    """
    return _environment().get_template("report.md.j2").render(**{"sections": [], **data})


@functools.lru_cache(maxsize=1)
def _environment() -> Environment:
    """The report templates' Jinja2 environment, made once per process (compiled templates kept, reloaded on change)."""
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        undefined=StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=False,
        lstrip_blocks=False,
    )
    env.filters["md_table"] = lambda b: markdown_table(b["headers"], b["rows"])
    return env


def render_html(template: str, *, trim: bool = True, **values: Any) -> str:
    """Fill the HTML template ``template`` with ``values``, every value escaped (Jinja2 autoescape).

    Args:
        template: the template file name.
        trim: strip the newline after a block tag and the whitespace before it (``trim_blocks``, ``lstrip_blocks``).
        values: the template's variables.

    Returns:
        The HTML text.
    """
    env = Environment(
        loader=FileSystemLoader(TEMPLATES),
        autoescape=select_autoescape(["html", "j2"]),
        trim_blocks=trim,
        lstrip_blocks=trim,
    )
    return env.get_template(template).render(**values)


def warm_templates() -> None:
    """Compile the report template ahead of the report (e.g. while model calls are in flight)."""
    _environment().get_template("report.md.j2")


def jsonable(x: Any) -> Any:
    """JSON-ready copy of ``x``: NaN/inf -> None, tuples -> lists, keys -> str, unknown objects -> str."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if x is None or isinstance(x, (str, int, bool)):
        return x
    return str(x)


def js_assign(name: str, data: Any) -> str:
    """``window.<name> = <data as JSON>;``: a data file the viewer loads with ``<script>`` (browsers refuse ``fetch``
    from ``file://``); ``</`` is escaped so the text could also be inlined in a ``<script>``.

    Args:
        name: the global variable.
        data: JSON-able data.

    Returns:
        The JavaScript line.
    """
    return (
        f"window.{name} = " + json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("</", "<\\/") + ";\n"
    )


def write_report_json(path: Path, data: dict[str, Any], *, root: Path) -> Path:
    """Write the report's data as JSON (:func:`jsonable`, keys in URLs masked), whole, no link followed in ``root``."""
    text = redact_secrets(json.dumps(jsonable(data), ensure_ascii=False, indent=1))
    atomic_write_text(path, text, root=root)
    return path
