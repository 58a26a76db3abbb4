"""Failure analysis across runs: a failure taxonomy from records and logs, and geometry
diagnostics (axis permutation, flip, label remap) of segmentation submissions.
"""
