"""The docker network of agents that have network: outbound only, the host out of reach.

Docker's default bridge lets a container reach every address of the host (through the bridge's
gateway address, which is the host's, any service bound to ``0.0.0.0`` answers) and every machine
the host can route to. Agents with network get instead the user network ``rexmle-agents``:

- a bridge of its own (host interface ``rexmle0``) with inter-container traffic off
  (``enable_icc=false``), so two runs on it do not reach each other;
- host firewall rules (iptables, as root), inserted before docker's own and checked before every
  run: every packet from ``rexmle0`` to the host itself is dropped (``INPUT``: all of the host's
  addresses, the gateway's included), and every packet forwarded from ``rexmle0`` to a private,
  shared, link-local or loopback range (:data:`BLOCKED_DESTINATIONS`: other machines of the site,
  other containers, the cloud metadata service) or to a subnet the host is directly attached to;
  bridged traffic between containers of ``rexmle0`` is dropped too (this needs ``br_netfilter``,
  which dockerd loads when it manages iptables).

What remains is outbound traffic to public addresses, through the NAT that dockerd sets up when it
manages iptables (a dockerd started with ``--iptables=false`` gives none: the network then reaches
nothing at all). Where the rules cannot be installed (no iptables, not root) a run with network
is refused with the reason; it never falls back to a host-reachable network. Name resolution
inside uses docker's embedded DNS server, which lives in the container's own namespace.
"""

from __future__ import annotations

import ipaddress
import shutil
import subprocess

NETWORK_NAME = "rexmle-agents"
BRIDGE_NAME = "rexmle0"
COMMAND_TIMEOUT_S = 30.0
BLOCKED_DESTINATIONS = (
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "224.0.0.0/4",
    "240.0.0.0/4",
)
"""Destinations no agent may reach: unspecified, private (RFC 1918), shared (RFC 6598), loopback,
link-local (cloud metadata), IETF protocol assignments, benchmarking, multicast and reserved."""


class NetworkUnavailable(RuntimeError):
    """The agents' network cannot be made or kept away from the host here."""


def _run(argv: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False, env=env
    )


def attached_subnets() -> list[str]:
    """The IPv4 subnets the host is directly attached to (besides loopback and ``rexmle0``)."""
    ip = shutil.which("ip")
    if ip is None:
        return []
    done = _run([ip, "-o", "-4", "addr", "show"])
    subnets: set[str] = set()
    for line in done.stdout.splitlines():
        fields = line.split()
        if len(fields) < 4 or fields[1] in ("lo", BRIDGE_NAME) or fields[2] != "inet":
            continue
        subnets.add(str(ipaddress.ip_interface(fields[3]).network))
    return sorted(subnets)


def firewall_rules(subnets: list[str]) -> list[tuple[str, list[str]]]:
    """(chain, rule) of every rule the network needs; chain ``FORWARD`` means the forwarding
    chain docker evaluates first (``DOCKER-USER`` where dockerd made it).
    """
    rules: list[tuple[str, list[str]]] = [("INPUT", ["-i", BRIDGE_NAME, "-j", "DROP"])]
    rules.append(("FORWARD", ["-i", BRIDGE_NAME, "-o", BRIDGE_NAME, "-j", "DROP"]))
    for destination in [*BLOCKED_DESTINATIONS, *subnets]:
        rules.append(("FORWARD", ["-i", BRIDGE_NAME, "-d", destination, "-j", "DROP"]))
    return rules


def _forward_chain(iptables: str) -> str:
    exists = _run([iptables, "-w", "-n", "-L", "DOCKER-USER"]).returncode == 0
    return "DOCKER-USER" if exists else "FORWARD"


def install_firewall() -> None:
    """Insert every missing rule of :func:`firewall_rules` at the top of its chain.

    Raises:
        NetworkUnavailable: iptables is missing or refuses (not root).
    """
    iptables = shutil.which("iptables")
    if iptables is None:
        msg = "iptables is not installed (apt-get install iptables)"
        raise NetworkUnavailable(msg)
    forward = _forward_chain(iptables)
    for chain, rule in firewall_rules(attached_subnets()):
        chain = forward if chain == "FORWARD" else chain
        if _run([iptables, "-w", "-C", chain, *rule]).returncode == 0:
            continue
        done = _run([iptables, "-w", "-I", chain, "1", *rule])
        if done.returncode != 0:
            detail = done.stderr.strip() or f"exit {done.returncode}"
            msg = f"iptables refused the rule {' '.join([chain, *rule])}: {detail}"
            raise NetworkUnavailable(msg)


def remove_firewall() -> None:
    """Delete the rules :func:`install_firewall` inserts (where they are)."""
    iptables = shutil.which("iptables")
    if iptables is None:
        return
    forward = _forward_chain(iptables)
    for chain, rule in firewall_rules(attached_subnets()):
        chain = forward if chain == "FORWARD" else chain
        while _run([iptables, "-w", "-D", chain, *rule]).returncode == 0:
            pass


def ensure_agent_network(docker: str, env: dict[str, str] | None = None) -> str:
    """Create the agents' network if it is missing and install its firewall; its name.

    Raises:
        NetworkUnavailable: the network cannot be created or its firewall installed.
    """
    if _run([docker, "network", "inspect", NETWORK_NAME], env).returncode != 0:
        done = _run(
            [
                docker, "network", "create", "--driver", "bridge",
                "--opt", f"com.docker.network.bridge.name={BRIDGE_NAME}",
                "--opt", "com.docker.network.bridge.enable_icc=false",
                "--label", "rexmle=agents", NETWORK_NAME,
            ],
            env,
        )  # fmt: skip
        if done.returncode != 0 and "already exists" not in done.stderr:
            detail = done.stderr.strip() or f"exit {done.returncode}"
            msg = f"docker cannot create the agents' network {NETWORK_NAME}: {detail}"
            raise NetworkUnavailable(msg)
    install_firewall()
    return NETWORK_NAME
