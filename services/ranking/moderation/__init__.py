"""The operator's queue of reported players and their decisions (the routes; the queue
itself is services/shared/reports.py, shared with the match service that files reports)."""
