"""The formula engine: pure Python and sympy, no Django (see docs/architecture.md §3)."""
