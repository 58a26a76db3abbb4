"""TopBrain 2025: multiclass brain vessel segmentation (``topbrain-track1`` CTA, ``-track2`` MRA)."""
