# The one image for every role in compose.yaml (migrate, match, later ranking).
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml setup.py README.md ./
COPY domain domain
COPY services services
COPY replays replays
COPY migrations migrations
COPY ludo_cli ludo_cli
# The rules engine's hot modules compiled with mypyc (setup.py; needs a C compiler):
# 1.5x (easy CPUs) to 2.5x (normal CPUs) faster, the same events (tests/test_compiled.py).
RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev \
    && LUDO_COMPILE=1 pip install --no-cache-dir . \
    && apt-get purge -y gcc libc6-dev && apt-get autoremove -y && rm -rf /var/lib/apt/lists/*
ENV LUDO_LOG_FORMAT=json
# Not root in the container either; the database roles are in compose.yaml.
RUN useradd --system --create-home ludo
USER ludo
EXPOSE 8000
# The uvicorn flags of services/shared/serving.py (UVICORN_ARGS): 64 KiB WebSocket frames,
# no permessage-deflate (each socket would compress every shared frame again),
# the header timeout of GuardedHttpToolsProtocol, 5 s keep-alive. compose.yaml's ranking too.
# --no-access-log: uvicorn's access lines are plain text on stdout, between the JSON lines;
# the services log their own `request` line (docs/operations.md, Logs).
CMD ["python", "-m", "uvicorn", "--factory", "services.match.app:app_from_env", "--host", "0.0.0.0", "--port", "8000", "--ws-max-size", "65536", "--ws-per-message-deflate", "false", "--http", "services.shared.limits:GuardedHttpToolsProtocol", "--timeout-keep-alive", "5", "--no-access-log"]
