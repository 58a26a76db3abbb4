# One image per agent for the docker sandbox (see images/README.md).
# AGENT: aide | ml-master | rdagent, or none for the agents without an LLM (dummy, baseline).
FROM python:3.11-slim-bookworm
ARG AGENT=none
ENV REXMLE_AGENTS_DIR=/opt/rexmle-agents \
    REXMLE_TORCH_VARIANT=cuda \
    PYTHONUNBUFFERED=1
# strace: R&D-Agent's runner needs it; git: agents installed from a pinned source
RUN apt-get update \
 && apt-get install -y --no-install-recommends git strace \
 && rm -rf /var/lib/apt/lists/*
COPY pyproject.toml README.md /src/
COPY rexmle /src/rexmle
RUN pip install --no-cache-dir /src && rm -rf /src
RUN if [ "$AGENT" != none ]; then rexmle agents install "$AGENT" --variant cuda; fi \
 && chmod -R a+rX /opt
# the harness runs the container as the caller's uid with a read-only root
WORKDIR /tmp
