"""Renderers: a Report in, a string out. They never probe and never decide the exit code."""
from __future__ import annotations

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (start-up of every command)
if TYPE_CHECKING:
    from typing import Any

from rcompat.errors import UsageError

FORMATS = ("text", "json", "markdown", "junit", "html", "prometheus")


def render(report, fmt: str = "text", **options: Any) -> str:
    fmt = (fmt or "text").lower()
    if fmt == "text":
        from rcompat.renderers.text import render_text as fn
    elif fmt == "json":
        from rcompat.renderers.json_ import render_json as fn
    elif fmt in ("markdown", "md"):
        from rcompat.renderers.markdown import render_markdown as fn
    elif fmt in ("junit", "xml"):
        from rcompat.renderers.junit import render_junit as fn
    elif fmt == "html":
        from rcompat.renderers.html import render_html as fn
    elif fmt == "prometheus":
        from rcompat.renderers.prometheus import render_prometheus as fn
    else:
        raise UsageError(f"unknown format '{fmt}'; choose from: {', '.join(FORMATS)}")
    return fn(report, **options)
