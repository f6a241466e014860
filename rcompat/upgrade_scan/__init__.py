"""The upgrade scan: will this machine's or image OLD's extensions, R packages and CUDA stack survive
moving to NEW?

`rcompat.upgrade(old, new)` (rcompat.upgrade_scan.scan.upgrade) returns a Report; nothing from either
root is ever run. The image reader (rcompat.upgrade_scan.image) turns each side into a root; the other
modules are the scan's checks. Everything is imported on first use, so this package stays cheap.
"""
