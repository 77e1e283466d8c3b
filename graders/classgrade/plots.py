"""The report's plots, drawn with matplotlib and inlined as SVG.

matplotlib because it is the plotting library every instructor's Python already has and
its SVG backend needs no browser-side code: the figures are plain ``<svg>`` elements with
the text drawn as paths, so the page shows them offline, with no script, font or CDN.
"""

from __future__ import annotations

import io
import re

import numpy as np
from matplotlib import rc_context
from matplotlib.colors import LinearSegmentedColormap
from matplotlib.figure import Figure

STYLE = {"svg.fonttype": "path", "svg.hashsalt": "tinytrain", "font.size": 9,
         "axes.spines.top": False, "axes.spines.right": False}
BLUE, RED, GREY = "#3b6ea8", "#b8433a", "#8a8a8a"


def to_svg(figure: Figure, label: str) -> str:
    """The figure as an inline ``<svg>`` element (no XML prolog, no fixed size: it scales
    to its container), labelled for screen readers."""
    buffer = io.StringIO()
    with rc_context(STYLE):
        figure.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    svg = buffer.getvalue()
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r'<svg ([^>]*?)width="[^"]*" height="[^"]*"',
                 lambda m: f'<svg {m.group(1)}', svg, count=1)
    return svg.replace("<svg ", f'<svg role="img" aria-label="{label}" class="plot" ', 1)


def _figure(width: float, height: float) -> Figure:
    with rc_context(STYLE):
        return Figure(figsize=(width, height), layout="constrained")


def totals_histogram(totals: list[float], max_total: float, label: str) -> str:
    with rc_context(STYLE):
        figure = _figure(6.4, 2.8)
        axes = figure.add_subplot()
        bins = np.linspace(0, max_total or 1, 21)
        axes.hist(np.clip(totals, 0, max_total or 1), bins=bins, color=BLUE, edgecolor="white")
        if totals:
            mean = float(np.mean(totals))
            axes.axvline(mean, color=RED, linewidth=1.2)
            axes.annotate(f"mean {mean:.1f}", (mean, 1), xycoords=("data", "axes fraction"),
                          xytext=(4, -12), textcoords="offset points", color=RED)
        axes.set_xlabel(f"{label} (of {max_total:g})")
        axes.set_ylabel("submissions")
        axes.yaxis.get_major_locator().set_params(integer=True)
        return to_svg(figure, f"histogram of {label}")


SCORE_BINS = ("0%", "1-24%", "25-49%", "50-74%", "75-99%", "100%")


def score_bin(fraction: float) -> int:
    if fraction <= 0:
        return 0
    if fraction >= 1:
        return 5
    return 1 + min(3, int(fraction * 4))


def task_heatmap(task_ids: list[str], fractions: dict[str, list[float]]) -> str:
    """Tasks down, score bands across, the number of submissions in each cell."""
    counts = np.zeros((len(task_ids), len(SCORE_BINS)), dtype=int)
    for row, task in enumerate(task_ids):
        for value in fractions[task]:
            counts[row, score_bin(value)] += 1
    with rc_context(STYLE):
        figure = _figure(6.4, 0.8 + 0.26 * len(task_ids))
        axes = figure.add_subplot()
        cmap = LinearSegmentedColormap.from_list("cells", ["#ffffff", BLUE])
        # vector cells (pcolormesh), not a raster image: the SVG stays pure vector
        axes.pcolormesh(counts, cmap=cmap, vmin=0, vmax=max(1, counts.max()),
                        edgecolors="white", linewidth=1)
        axes.invert_yaxis()
        axes.set_xticks(np.arange(len(SCORE_BINS)) + 0.5, SCORE_BINS)
        axes.set_yticks(np.arange(len(task_ids)) + 0.5, task_ids)
        axes.tick_params(length=0)
        for spine in axes.spines.values():
            spine.set_visible(False)
        top = max(1, counts.max())
        for (r, c), n in np.ndenumerate(counts):
            if n:
                axes.text(c + 0.5, r + 0.5, str(n), ha="center", va="center", fontsize=8,
                          color="white" if n > top * 0.55 else "black")
        axes.set_xlabel("score on the task (share of its points)")
        return to_svg(figure, "heat map of submissions per task and score band")


def task_bars(task_ids: list[str], mean_share: list[float], full_share: list[float]) -> str:
    with rc_context(STYLE):
        figure = _figure(6.4, 2.6)
        axes = figure.add_subplot()
        x = np.arange(len(task_ids))
        axes.bar(x - 0.2, np.array(mean_share) * 100, 0.4, color=BLUE, label="mean score")
        axes.bar(x + 0.2, np.array(full_share) * 100, 0.4, color=GREY, label="full marks")
        axes.set_xticks(x, task_ids, rotation=90 if len(task_ids) > 12 else 0)
        axes.set_ylabel("% of the class")
        axes.set_ylim(0, 100)
        axes.legend(frameon=False, ncols=2, loc="upper right", bbox_to_anchor=(1, 1.18))
        return to_svg(figure, "mean score and full-marks rate per task")


def time_histogram(durations: list[float], failed: list[float]) -> str:
    with rc_context(STYLE):
        figure = _figure(6.4, 2.4)
        axes = figure.add_subplot()
        top = max(durations + failed + [1.0])
        bins = np.linspace(0, top * 1.02, 21)
        axes.hist([durations, failed], bins=bins, stacked=True, color=[BLUE, RED],
                  label=["graded", "error, crash or timeout"], edgecolor="white")
        axes.set_xlabel("grading time per submission (s)")
        axes.set_ylabel("submissions")
        axes.yaxis.get_major_locator().set_params(integer=True)
        if failed:
            axes.legend(frameon=False)
        return to_svg(figure, "histogram of grading times")
