"""server part (being written)."""
