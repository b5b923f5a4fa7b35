"""Env wrappers: third-party env suites (Atari, ...) brought into tfrl's env types."""
