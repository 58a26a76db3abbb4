"""Challenge families: one folder per family with task YAML files and the task implementations."""
