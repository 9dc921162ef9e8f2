"""journal part (being written)."""
