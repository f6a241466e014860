"""rcompat upgrade: will this machine's or image OLD's extensions, R packages and CUDA stack survive moving to NEW?

`rcompat.upgrade(old, new)` (or `rcompat.upgrade.upgrade(old, new)`) returns a Report; nothing from
either root is ever run. The modules are imported on first use, so `import rcompat.upgrade` stays cheap.
"""
from __future__ import annotations

import sys
import types

__all__ = ["upgrade"]


def upgrade(old, new, **options):
    """Compare OLD and NEW (a directory root, an image tarball, an OCI layout, or "/"): see
    rcompat.upgrade.scan.upgrade for the options (driver, carry, extract, progress)."""
    from rcompat.upgrade.scan import upgrade as _upgrade

    return _upgrade(old, new, **options)


class _CallablePackage(types.ModuleType):
    """The public name is `rcompat.upgrade(old, new)`, like `rcompat.doctor()`; but `rcompat.upgrade` is
    also this package, and a package attribute cannot be a function too. So the package is callable."""

    def __call__(self, old, new, **options):
        return upgrade(old, new, **options)


sys.modules[__name__].__class__ = _CallablePackage
