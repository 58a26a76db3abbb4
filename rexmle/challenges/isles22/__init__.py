"""ISLES'22: ischaemic stroke lesion segmentation from DWI, ADC and FLAIR (task ``isles22``)."""
