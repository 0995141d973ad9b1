"""compose.yaml, checked without a Docker engine: the Compose specification's JSON schema
(as vendored by the check-jsonschema package, which notes its source and licence) and the
role split of docs/event-store.md."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from importlib.resources import files
from typing import Any

import jsonschema
import pytest
import yaml
from sqlalchemy.engine import make_url

from ludo_cli.cluster import COMPOSE_HAPROXY_CFG, compose_haproxy_config, haproxy_path
from ludo_cli.ha import COMPOSE_HA_HAPROXY_CFG, compose_ha_haproxy_config
from tests import paths

ROOT = paths.ROOT


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text())
    return loaded


def _url(service: dict[str, Any]) -> Any:
    return make_url(service["environment"]["DATABASE_URL"])


@pytest.fixture(scope="module")
def compose_ha() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "deploy/compose.ha.yaml").read_text())
    return loaded


def _schema_errors(document: dict[str, Any]) -> list[str]:
    text = files("check_jsonschema.builtin_schemas.vendor").joinpath("compose-spec.json")
    schema = json.loads(text.read_text())
    validator = jsonschema.validators.validator_for(schema)
    validator.check_schema(schema)
    return [e.message for e in validator(schema).iter_errors(document)]


def test_compose_file_follows_the_compose_specification(compose: dict[str, Any]) -> None:
    """compose.yaml validates against the Compose specification's JSON schema."""
    assert _schema_errors(compose) == []


def test_the_ha_override_runs_patroni_behind_the_postgres_name(
    compose: dict[str, Any], compose_ha: dict[str, Any]
) -> None:
    """deploy/compose.ha.yaml follows the specification and makes `postgres` HAProxy in
    front of etcd and three Patroni nodes (each its own volume, synchronous_mode), so the
    services and `migrate` keep their URLs, and reads get the read-only port."""
    assert _schema_errors(compose_ha) == []
    services = compose_ha["services"]
    nodes = [f"patroni{i}" for i in (1, 2, 3)]
    assert {"etcd", "postgres", *nodes} <= set(services)
    assert set(services) - {"etcd", *nodes} <= set(compose["services"])
    assert len({services[n]["volumes"][0] for n in nodes}) == 3
    for node in nodes:
        assert services[node]["environment"]["PATRONI_NAME"] == node
        assert services["postgres"]["depends_on"][node]["condition"] == "service_healthy"
    postgres = services["postgres"]
    assert postgres["image"] == "haproxy:2.6"
    assert (
        f"./{COMPOSE_HA_HAPROXY_CFG}:/usr/local/etc/haproxy/haproxy.cfg:ro" in postgres["volumes"]
    )
    patroni = yaml.safe_load((ROOT / "deploy/patroni/patroni.yml").read_text())
    dcs = patroni["bootstrap"]["dcs"]
    assert dcs["synchronous_mode"] is True and dcs["postgresql"]["use_pg_rewind"] is True
    assert (ROOT / "deploy/patroni/post-bootstrap.sh").exists()
    for name in ("match", "ranking"):
        read = make_url(services[name]["environment"]["LUDO_DATABASE_READ_URL"])
        assert (read.host, read.port, read.username) == ("postgres", 5433, "ludo_app")


def test_migrate_runs_once_as_the_owner_and_grants_the_app_role(compose: dict[str, Any]) -> None:
    """`migrate` runs `ludo db upgrade` as the owner with LUDO_DB_APP_ROLE, after a healthy
    PostgreSQL 18, and is not restarted once it has succeeded."""
    services = compose["services"]
    assert services["postgres"]["image"] == "postgres:18"
    migrate = services["migrate"]
    assert migrate["command"] == ["ludo", "db", "upgrade"]
    assert _url(migrate).username == "ludo_owner"
    assert migrate["environment"]["LUDO_DB_APP_ROLE"] == "ludo_app"
    assert migrate["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert migrate["restart"].startswith("on-failure")
    roles = (ROOT / "deploy/postgres/10-ludo-roles.sh").read_text()
    assert "CREATE ROLE ludo_owner" in roles and "CREATE ROLE ludo_app" in roles
    mount = "./deploy/postgres/10-ludo-roles.sh:/docker-entrypoint-initdb.d/"
    assert any(v.startswith(mount) for v in services["postgres"]["volumes"])


@pytest.mark.parametrize("name", ["match", "ranking"])
def test_services_run_as_the_app_role_after_the_migration(
    compose: dict[str, Any], name: str
) -> None:
    """match and ranking connect as the app role (not the owner, not the superuser), start
    after `migrate` succeeded, and have a health check and a restart policy."""
    service = compose["services"][name]
    assert _url(service).username == "ludo_app"
    assert "LUDO_DB_APP_ROLE" not in service["environment"]
    assert service["depends_on"]["migrate"]["condition"] == "service_completed_successfully"
    assert service["depends_on"]["postgres"]["condition"] == "service_healthy"
    assert "/healthz" in " ".join(service["healthcheck"]["test"])
    assert service["restart"] == "unless-stopped"
    assert compose["services"]["postgres"]["restart"] == "unless-stopped"
    assert "healthcheck" in compose["services"]["postgres"]


def test_the_balancer_fronts_both_services_and_only_it_is_published(
    compose: dict[str, Any],
) -> None:
    """HAProxy 2.6 (Debian 12's version) publishes 8000 and 8100 with the configuration of
    deploy/haproxy/haproxy.cfg, after healthy instances; the instances publish nothing and
    take the client's address from its X-Forwarded-For."""
    services = compose["services"]
    balancer = services["balancer"]
    assert balancer["image"] == "haproxy:2.6"
    assert f"./{COMPOSE_HAPROXY_CFG}:/usr/local/etc/haproxy/haproxy.cfg:ro" in balancer["volumes"]
    assert sorted(balancer["ports"]) == ["8000:8000", "8100:8100"]
    assert balancer["restart"] == "unless-stopped" and "healthcheck" in balancer
    for name, port in (("match", "8000"), ("ranking", "8100")):
        assert balancer["depends_on"][name]["condition"] == "service_healthy"
        service = services[name]
        assert "ports" not in service and service["expose"] == [port]
        command = service["command"]
        assert "--proxy-headers" in command
        assert command[command.index("--port") + 1] == port
    assert services["match"]["environment"]["LUDO_RANKING_URL"] == "http://balancer:8100"


@pytest.mark.parametrize(
    ("path", "written_by"),
    [
        (COMPOSE_HAPROXY_CFG, compose_haproxy_config),
        (COMPOSE_HA_HAPROXY_CFG, compose_ha_haproxy_config),
    ],
)
def test_the_compose_balancer_configuration_is_the_tested_one(
    path: str, written_by: Callable[[], str]
) -> None:
    """deploy/haproxy/haproxy.cfg and haproxy-ha.cfg are what ludo_cli/cluster.py and
    ludo_cli/ha.py write for compose (the code the balancer and HA tests run locally), and
    HAProxy accepts them."""
    written = (ROOT / path).read_text()
    assert written == written_by()
    haproxy = haproxy_path()
    assert haproxy is not None, "install Debian's haproxy package (.ci/run does)"
    check = subprocess.run(
        [haproxy, "-c", "-f", str(ROOT / path)],
        check=False,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stdout + check.stderr
