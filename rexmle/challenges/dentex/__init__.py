"""DENTEX 2023: hierarchical detection of abnormal teeth on panoramic X-rays (task ``dentex``)."""
