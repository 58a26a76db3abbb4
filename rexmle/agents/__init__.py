"""Agents: declarations (YAML) and the entry modules of the built-in agents.

An agent is a command run inside a workspace (see :mod:`rexmle.runner.workspace`). It reads the
task's public data from ``$DATA_DIR`` and writes its submission into ``$SUBMISSION_DIR``; the
other variables it gets are listed in :data:`rexmle.agents.registry.AGENT_ENV_VARS`.
"""
