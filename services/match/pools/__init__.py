"""Quick play: the pools' routes and the pairing service."""
