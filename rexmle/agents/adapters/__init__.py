"""Adapter programs of the LLM agents, run inside each agent's own environment.

Each ``<agent>.py`` maps a run's workspace and settings onto its agent's arguments, keeps the
best valid submission in ``submission/`` and collects the agent's own logs; the shared part is
``adapter_runtime.py``. They import only the standard library and each other.
"""
