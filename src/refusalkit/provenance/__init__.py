"""provenance part (being written)."""
