"""R engine: R, its deep-learning packages, the Python reticulate binds, and whether torch runs.

    rcompat.r.probe(timeout=None, lib_paths=None, ...) -> RFacts   (children only; never crashes)
    rcompat.r.host_is_r() -> bool                                   (reticulate called us)
    rcompat.r.rules.load_rules() / evaluate(stack)                  (breakage rules as data)
    rcompat.r.verify.verify(package, facts)                         (isolated verification scripts)

Imports here stay light: rpy2 is only ever imported in the worker child.
"""
from __future__ import annotations

from rcompat.r.host import host_is_r, locate_r, r_host

__all__ = ["probe", "RFacts", "host_is_r", "locate_r", "r_host"]


def probe(*args, **kwargs):
    from rcompat.r.facts import probe as _probe

    return _probe(*args, **kwargs)


def __getattr__(name: str):
    if name in ("RFacts", "PackageFact"):
        from rcompat.r import facts

        return getattr(facts, name)
    raise AttributeError(name)
