"""The package version, in one place: hatch reads it, the code imports it from here."""

__version__ = "0.1.0"
