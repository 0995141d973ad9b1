"""The operator dashboard: its page and the live view it polls."""
