"""PUMA 2024: melanoma tissue segmentation and nuclei detection in H&E regions of interest.

Four tasks share one raw download (``puma-shared``) and one split: ``puma-track1-task1`` and
``puma-track2-task1`` (tissue maps), ``puma-track1-task2`` and ``puma-track2-task2`` (nuclei).
"""
