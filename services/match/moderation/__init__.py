"""Moderation: reports, standing, reputation; the operator's routes and live view."""
