"""Locked virtualenvs on the host: the agents' environments and the LLM gateway's.

:mod:`rexmle.envs.locked` holds what both kinds share: where the cache is, which ``uv`` and
which interpreter build them, how an install step runs, and the stamp that marks a complete
install.
"""
