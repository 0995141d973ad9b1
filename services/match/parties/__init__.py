"""Parties: their routes and socket, party commands and a match's start, the tables a guest
sits at."""
