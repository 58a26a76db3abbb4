"""Scaffolding for people adding to the benchmark: a new challenge family from a template."""
