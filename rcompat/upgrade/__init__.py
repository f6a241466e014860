"""rcompat upgrade: will this machine's or image OLD's extensions, R packages and CUDA stack survive moving to NEW?

`rcompat.upgrade(old, new)` (or `rcompat.upgrade.upgrade(old, new)`) returns a Report; nothing from
either root is ever run. The modules are imported on first use, so `import rcompat.upgrade` stays cheap.
"""
from __future__ import annotations

from rcompat.callable_module import make_callable

__all__ = ["upgrade"]


def upgrade(old, new, **options):
    """Compare OLD and NEW (a directory root, an image tarball, an OCI layout, or "/"): see
    rcompat.upgrade.scan.upgrade for the options (driver, carry, extract, progress)."""
    from rcompat.upgrade.scan import upgrade as _upgrade

    return _upgrade(old, new, **options)


# `rcompat.upgrade` names both this package and the function the issue asks for, rcompat.upgrade(old,
# new), like rcompat.doctor(): the package is callable (rcompat.callable_module).
make_callable(__name__, "upgrade")
