"""Example policies."""
