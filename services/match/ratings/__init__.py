"""`/api/ratings/*`, forwarded to the ranking service."""
