"""USenhance 2023: paired ultrasound enhancement, low to high quality (task ``usenhance``)."""
