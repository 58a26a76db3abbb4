"""TopCoW 2024: Circle of Willis segmentation, ROI box and variant classification on CTA and MRA.

Six tasks, ``topcow-track{1,2}-task{1,2,3}``: track 1 is CT angiography (``ct``), track 2 MR
angiography (``mr``); task 1 segments 13 CoW vessel classes, task 2 boxes the CoW region of
interest, task 3 classifies the CoW variant as two edge lists. The three tasks of a track share
one raw download and one train/test split.
"""
