"""The LLM gateway: provider config, price table, per-run tokens, usage log and budget stop.

Agents in a sandbox never hold a provider key. One LiteLLM proxy per ``rexmle run`` listens on
127.0.0.1 with the keys in its own environment; each run gets a random token and reaches the
proxy through a relay. A callback loaded by the proxy writes one usage line per call into the
run's folder, refuses calls once the run's budget or rate cap is spent, and the harness then
stops the run (status ``budget_exceeded``).
"""
