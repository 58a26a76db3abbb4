"""LDCT-IQA 2023: no-reference perceptual quality of low-dose abdominal CT slices (``ldct-iqa``)."""
