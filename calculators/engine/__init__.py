"""The formula engine: pure Python and sympy, no Django (see DESIGN.md §3)."""
