"""Command-line interface: ``kraftlog dump|inspect|replay|...``."""
