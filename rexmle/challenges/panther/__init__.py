"""PANTHER 2025: pancreatic tumour segmentation on MRI (tasks ``panther-task1``, ``panther-task2``)."""
