"""Arena tournaments: routes, socket, the arenas service and its runner, the views."""
