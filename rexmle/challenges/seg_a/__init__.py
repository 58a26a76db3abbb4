"""SEG.A 2023: aortic vessel tree segmentation in CT angiography (task ``seg_a``)."""
