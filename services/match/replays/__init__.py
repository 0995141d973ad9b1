"""Replays on the web: the replay routes and pages, the replay store, tournament export."""
