"""Data tables, one entry per concept: engines, clients, chips. No I/O, no policy."""
