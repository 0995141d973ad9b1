"""Match-service tests over HTTP on a real PostgreSQL (fixtures from tests/store)."""
