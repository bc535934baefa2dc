"""Matplotlib charts for the report (PNG, headless Agg backend); matplotlib and numpy load on the first chart."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from ..core import write_bytes_in


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the headless Agg backend (imported on first use).

    Returns:
        The module.
    """
    import matplotlib  # loaded on the first chart only: a run that draws none never imports it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(plt: Any, fig: Any, path: Path, root: Path) -> Path:
    """Write ``fig`` as PNG to ``path`` whole, following no link below ``root``."""
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format="png", dpi=110)
    finally:
        plt.close(fig)
    return write_bytes_in(root, path, buf.getvalue())


def ranking_chart(
    path: Path,
    models: list[str],
    means: list[float],
    ci_low: list[float],
    ci_high: list[float],
    *,
    metric: str,
    scale: str,
    root: Path,
) -> Path:
    """Horizontal bar chart of per-model means with 95% CI error bars (none for NaN bounds).

    Args:
        path: the PNG file written.
        models: the model names, in order.
        means: their means.
        ci_low: the CI low ends.
        ci_high: the CI high ends.
        metric: the metric's name (axis label).
        scale: its scale (axis label).
        root: a folder below which no link is followed when writing.

    Returns:
        ``path``.
    """
    plt = pyplot()
    import numpy as np  # on the first chart only, like matplotlib

    m = np.asarray(means, dtype=float)
    lo = np.nan_to_num(m - np.asarray(ci_low, dtype=float), nan=0.0)
    hi = np.nan_to_num(np.asarray(ci_high, dtype=float) - m, nan=0.0)
    fig, ax = plt.subplots(figsize=(7, 0.5 * len(models) + 1.5))
    y = np.arange(len(models))
    ax.barh(y, m, xerr=[lo, hi], color="#4C72B0", capsize=4)
    ax.set_yticks(y, labels=models)
    ax.invert_yaxis()
    ax.set_xlabel(f"{metric}: mean per item (scale {scale})\nerror bars: 95% bootstrap CI")
    ax.set_title(f"Ranking by {metric}")
    fig.tight_layout()
    return _save(plt, fig, path, root)


def heatmap(
    path: Path,
    rows: list[str],
    cols: list[str],
    values: list[list[float]],
    *,
    title: str,
    root: Path,
) -> Path:
    """Annotated heatmap (rows x cols) on a 0-10 colour scale, e.g. model x rubric criterion.

    Args:
        path: the PNG file written.
        rows: the row labels.
        cols: the column labels.
        values: one row of values per row label.
        title: the chart title.
        root: a folder below which no link is followed when writing.

    Returns:
        ``path``.
    """
    plt = pyplot()
    import numpy as np  # on the first chart only, like matplotlib

    v = np.asarray(values, dtype=float)
    fig, ax = plt.subplots(figsize=(1.3 * len(cols) + 2.5, 0.6 * len(rows) + 1.8))
    im = ax.imshow(v, cmap="viridis", vmin=0.0, vmax=10.0, aspect="auto")
    ax.set_xticks(range(len(cols)), labels=cols, rotation=30, ha="right")
    ax.set_yticks(range(len(rows)), labels=rows)
    for r in range(len(rows)):
        for c in range(len(cols)):
            if not np.isnan(v[r, c]):
                ax.text(c, r, f"{v[r, c]:.1f}", ha="center", va="center", color="w", fontsize=8)
    fig.colorbar(im, ax=ax)
    ax.set_title(title)
    fig.tight_layout()
    return _save(plt, fig, path, root)
