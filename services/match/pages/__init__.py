"""The site's pages and `/healthz` (the HTML itself lives in `services/match`)."""
