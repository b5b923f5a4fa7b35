"""Execution operators: the building blocks of an algorithm's training plan (see SPEC §3)."""
