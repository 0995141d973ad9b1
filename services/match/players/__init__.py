"""Players: creating a guest, who am I, my tables; who holds a lobby open."""
