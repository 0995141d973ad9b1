"""Code shared by the match and ranking services: settings, database, event store.

Both services import from here; nothing in this package is duplicated elsewhere.
"""
