"""`rcompat soak --plot FILE`: memory per iteration, one panel per metric, titled with its verdict.
matplotlib is an optional extra (`pip install rcompat[plot]`), imported only here."""
from __future__ import annotations

from typing import TYPE_CHECKING

from rcompat.errors import UsageError

if TYPE_CHECKING:
    from rcompat.soak.classify import SeriesVerdict
    from rcompat.soak.runner import SoakResult

SUFFIXES = (".png", ".svg", ".pdf")


def check_target(path: str) -> None:
    """Before the run: the suffix names a format matplotlib writes, and matplotlib is installed."""
    import importlib.util

    if not path.lower().endswith(SUFFIXES):
        raise UsageError(f"--plot {path}: name a .png, .svg or .pdf file")
    if importlib.util.find_spec("matplotlib") is None:
        raise UsageError("--plot needs matplotlib: pip install 'rcompat[plot]' (or pip install matplotlib)")
    from rcompat.atomic import check_writable_target

    check_writable_target(path)


def draw(result: "SoakResult", verdicts: dict[str, "SeriesVerdict"], path: str, title: str) -> None:
    import os
    import tempfile

    import matplotlib

    matplotlib.use("Agg")  # no display: files only
    import matplotlib.pyplot as plt

    metrics = [m for m in verdicts if result.column(m)]
    fig, axes = plt.subplots(len(metrics), 1, figsize=(8, 2.4 * max(len(metrics), 1)), squeeze=False, sharex=True)
    for ax, metric in zip(axes[:, 0], metrics):
        v = verdicts[metric]
        scale, unit = (1 / 1048576, "MiB") if v.unit == "bytes" else (1.0, v.unit)
        points = [(s["sample"], s["after"][metric]) for s in result.samples if metric in s.get("after", {})]
        ax.plot([p[0] for p in points], [p[1] * scale for p in points], label="after collection", lw=1.2)
        pairs = [(s["sample"], s["before"][metric]) for s in result.samples if metric in s.get("before", {})]
        if v.returned is not None and pairs:
            ax.plot([p[0] for p in pairs], [p[1] * scale for p in pairs], label="before collection", lw=0.8,
                    alpha=0.6, marker="." if len(pairs) < len(points) else None)
        ax.set_ylabel(f"{metric} ({unit})")
        ax.set_title(f"{metric}: {v.verdict} ({v.tail_slope * scale:+.3g} {unit}/iteration in the second half)",
                     fontsize=9)
        ax.legend(fontsize=7, loc="upper left")
    axes[-1, 0].set_xlabel("iteration (after warm-ups)")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".rcompat-plot-", suffix=os.path.splitext(path)[1], dir=folder)
    os.close(fd)
    try:
        fig.savefig(tmp)
        os.replace(tmp, path)
    finally:
        plt.close(fig)
        if os.path.exists(tmp):
            os.unlink(tmp)
