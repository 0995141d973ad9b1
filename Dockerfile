# The one image for every role in compose.yaml (migrate, match, later ranking).
FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml README.md ./
COPY domain domain
COPY services services
COPY replays replays
COPY migrations migrations
COPY ludo_cli ludo_cli
RUN pip install --no-cache-dir .
ENV LUDO_LOG_FORMAT=json
EXPOSE 8000
CMD ["python", "-m", "uvicorn", "--factory", "services.match.app:app_from_env", "--host", "0.0.0.0", "--port", "8000"]
