"""race engine (see docs/architecture.md)."""
