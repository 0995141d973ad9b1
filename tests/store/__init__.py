"""Event-store and database tests on a real PostgreSQL (see conftest.py).

A package, so that its conftest is imported as `store.conftest` and never shadows the
domain tests' top-level `conftest` module.
"""
