"""A ``rexmle`` process using the node's shared gateway, driven line by line over stdin.

Run: ``python shared_gateway_client.py CONFIG RUN_FOLDER BUDGET_USD``. It attaches (printing
``{"port", "keeper", "startup_s"}``), registers one run with ``BUDGET_USD``, then answers each
command line: ``call`` (one chat completion with its own token: the status), ``call TOKEN``
(the same with another token) and ``leave`` (the run's totals; the lease is given back).
"""

from __future__ import annotations

import http.client
import json
import sys
from pathlib import Path

from rexmle.llm.config import Limits, load_llm_config
from rexmle.llm.node_gateway import SharedGateway

CHAT = {"model": "gw/gpt-5", "messages": [{"role": "user", "content": "hello"}]}


def status(port: int, token: str) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    headers = {"Content-Type": "application/json", "Authorization": f"Bearer {token}"}
    connection.request("POST", "/v1/chat/completions", json.dumps(CHAT), headers)
    answer = connection.getresponse()
    answer.read()
    connection.close()
    return answer.status


def main() -> None:
    config_path, folder, budget = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
    gateway = SharedGateway(load_llm_config(config_path)).start()
    assert gateway.keeper is not None
    link = gateway.register(folder.name, folder, limits=Limits(budget_usd=budget))
    hello = {"port": gateway.port, "keeper": gateway.keeper.pid, "token": link.token}
    print(json.dumps({**hello, "startup_s": gateway.startup_s}), flush=True)
    for line in sys.stdin:
        words = line.split()
        if words[0] == "call":
            print(status(gateway.port, words[1] if len(words) > 1 else link.token), flush=True)
        elif words[0] == "leave":
            totals = link.totals()
            gateway.stop()
            print(totals.model_dump_json(), flush=True)
            return


if __name__ == "__main__":
    main()
