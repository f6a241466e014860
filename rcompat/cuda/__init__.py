"""cuda engine (see docs/architecture.md)."""
