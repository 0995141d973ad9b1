#!/bin/sh
# Patroni's post_bootstrap (deploy/patroni/patroni.yml): run once, on the node that
# initialised the cluster. Creates the `ludo` database, then the roles of compose.yaml with
# the script the single-server layout runs (deploy/postgres/10-ludo-roles.sh).
set -eu
psql -v ON_ERROR_STOP=1 --dbname "$1" -c 'CREATE DATABASE ludo'
POSTGRES_USER=postgres POSTGRES_DB=ludo PGHOST=/var/run/postgresql \
    sh /etc/patroni/10-ludo-roles.sh
