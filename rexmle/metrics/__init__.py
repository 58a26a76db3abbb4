"""Metric functions: pure computations on numpy arrays, with no file I/O and no task knowledge.

Every function states its definition, units, empty-case policy and the challenge definition it
follows in its docstring. Distances always take ``spacing_mm`` per array axis, in the array's own
axis order; no metric assumes a unit spacing.
"""
