"""The lobby socket: open parties, quick play's counts, the matches being played now."""
