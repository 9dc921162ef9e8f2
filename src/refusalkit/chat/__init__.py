"""chat part (being written)."""
