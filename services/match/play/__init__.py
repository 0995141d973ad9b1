"""Playing a match: its routes and socket, the one path from a command to its events,
reading matches, turn deadlines and their worker, presence at a seat, stamps."""
