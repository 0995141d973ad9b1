#!/bin/sh
# Run once by the postgres image's entrypoint on a new data directory (compose.yaml mounts
# it into /docker-entrypoint-initdb.d). Creates the two roles of docs/event-store.md:
# `ludo_owner`, the migration owner (owns the database, so `ludo db upgrade` creates the
# tables as it), and `ludo_app`, the services' login role, which owns nothing; its
# privileges are granted by `ludo db upgrade` with LUDO_DB_APP_ROLE=ludo_app.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
    -v owner_pw="$LUDO_DB_OWNER_PASSWORD" -v app_pw="$LUDO_DB_APP_PASSWORD" \
    -v db="$POSTGRES_DB" <<'SQL'
CREATE ROLE ludo_owner LOGIN PASSWORD :'owner_pw';
CREATE ROLE ludo_app LOGIN PASSWORD :'app_pw';
ALTER DATABASE :"db" OWNER TO ludo_owner;
REVOKE ALL ON DATABASE :"db" FROM PUBLIC;
GRANT CONNECT ON DATABASE :"db" TO ludo_app;
SQL
