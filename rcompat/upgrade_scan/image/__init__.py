"""The image reader: one root filesystem from a directory, "/", a docker/podman archive or an OCI layout,
read without a container runtime and without writing outside its own temporary directory.

It imports nothing else of rcompat.upgrade_scan; the scan reads a root through `open_source` alone.
"""
