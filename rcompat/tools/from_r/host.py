"""What the R host told rcompat about itself (R.version, .libPaths(), packages), kept for this Python."""
from __future__ import annotations

import json
from typing import Any

_HOST_FACTS: dict[str, Any] | None = None


def set_host_facts(facts_json: str) -> dict[str, Any]:
    """Record the R host's facts (JSON from the R package) for this Python; returns them parsed."""
    global _HOST_FACTS
    facts = json.loads(facts_json) if facts_json else {}
    if not isinstance(facts, dict):
        raise ValueError("host facts must be a JSON object")
    _HOST_FACTS = facts
    return facts


def host_facts() -> dict[str, Any] | None:
    """The R host's facts when rcompat runs inside R (set by the R package), else None."""
    return _HOST_FACTS
