#!/usr/bin/env bash
# Thin wrapper: the script ships inside the package so `rsr doctor --fix` finds it when installed.
exec bash "$(dirname "$0")/../rsr/sandbox/setup-docker.sh" "$@"
