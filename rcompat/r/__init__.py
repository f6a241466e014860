"""r engine (see docs/architecture.md)."""
