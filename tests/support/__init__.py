"""Test support code shared by several parts' tests (real servers on loopback, helpers)."""
