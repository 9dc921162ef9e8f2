"""decide part (being written)."""
