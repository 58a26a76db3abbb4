"""NeurIPS 2022 Cell Segmentation: multi-modality cell instance segmentation (``neurips-cellseg``)."""
