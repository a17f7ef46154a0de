#!/usr/bin/env bash
# Brings up a Docker engine (>= 24) with Compose v2 on a Debian 12 machine that has no
# container registry, and a locally bootstrapped debian:bookworm-slim base image.
# Idempotent: every step is skipped when its result is already there. Uses a registry
# (docker pull) when one is reachable instead of debootstrap. Prints one line per step; apt,
# debootstrap and docker import output goes to the set-up log (see setup-progress.sh).
set -euo pipefail
# shellcheck source=setup-progress.sh
source "$(dirname "${BASH_SOURCE[0]}")/setup-progress.sh"

RSR_DOCKER_HOME="${RSR_DOCKER_HOME:-/var/lib/rsr-docker}"
TRIXIE_DOCKER="26.1.5+dfsg1-9+deb13u1+b1"
TRIXIE_COMPOSE="2.26.1-4"
MIRROR="${RSR_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
# Docker Hub names (`alexgshaw/<task>:20251031`) are resolved through this registry mirror
# first: a loopback registry started there serves them (tests/spine/test_image_pull.py pushes
# to it). Harmless when nothing listens: the engine then falls back to Docker Hub itself.
REGISTRY_MIRROR="${RSR_REGISTRY_MIRROR:-http://127.0.0.1:5959}"

need_root() {
  if [ "$(id -u)" != 0 ]; then
    progress_note "must run as root (installs packages and starts dockerd)"; exit 2
  fi
}

version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" = "$2" ]; }

engine_version() { docker version --format '{{.Server.Version}}' 2>/dev/null || true; }

compose_version() { docker compose version --short 2>/dev/null | sed 's/^v//' || true; }

missing_host_packages() {
  local bin
  for bin in containerd runc debootstrap iptables; do
    command -v "$bin" >/dev/null 2>&1 || printf '%s ' "$bin"
  done
}

install_host_packages() {
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
    containerd runc debootstrap iptables ca-certificates
}

trixie_engine_installed() {
  [ -x "$RSR_DOCKER_HOME/bin/dockerd" ] && [ -x /usr/local/lib/docker/cli-plugins/docker-compose ]
}

install_trixie_engine() {
  # bookworm's dockerd (20.10) and compose v1 are older than Inspect needs; trixie's
  # dockerd and compose binaries run on bookworm's libc, containerd and runc.
  local dockerd_bin="$RSR_DOCKER_HOME/bin/dockerd"
  local compose_bin=/usr/local/lib/docker/cli-plugins/docker-compose
  local work="$RSR_DOCKER_HOME/apt"
  mkdir -p "$work/lists/partial" "$work/parts" "$work/debs" "$work/root" "$RSR_DOCKER_HOME/bin"
  cat >"$work/parts/trixie.sources" <<SRC
Types: deb
URIs: $MIRROR
Suites: trixie
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  local opts=(-o "Dir::State::Lists=$work/lists" -o Dir::Etc::SourceList=/dev/null
              -o "Dir::Etc::SourceParts=$work/parts" -o "Dir::Cache=$work/cache")
  mkdir -p "$work/cache/archives/partial"
  # trixie's docker.io holds the daemon only; the client is docker-cli, fetched when none is here.
  local debs=("docker.io=$TRIXIE_DOCKER" "docker-compose=$TRIXIE_COMPOSE")
  command -v docker >/dev/null 2>&1 || debs+=("docker-cli=$TRIXIE_DOCKER")
  apt-get "${opts[@]}" update
  (cd "$work/debs" && apt-get "${opts[@]}" download "${debs[@]}")
  for deb in "$work"/debs/*.deb; do dpkg -x "$deb" "$work/root"; done
  install -m 0755 "$work/root/usr/sbin/dockerd" "$dockerd_bin"
  install -m 0755 "$work/root/usr/sbin/docker-proxy" "$RSR_DOCKER_HOME/bin/docker-proxy" 2>/dev/null \
    || install -m 0755 "$(find "$work/root" -name docker-proxy -type f | head -1)" "$RSR_DOCKER_HOME/bin/docker-proxy"
  mkdir -p "$(dirname "$compose_bin")"
  install -m 0755 "$(find "$work/root" -path '*cli-plugins/docker-compose' -type f | head -1)" "$compose_bin"
  if ! command -v docker >/dev/null 2>&1; then
    install -m 0755 "$(find "$work/root" -path '*/bin/docker' -type f | head -1)" /usr/local/bin/docker
  fi
}

launch_engine() {
  pgrep -x containerd >/dev/null || (setsid containerd >"$RSR_DOCKER_HOME/containerd.log" 2>&1 &)
  # No bridge network: traffic to private ranges is not allowed here, so sandboxes run with
  # network_mode none and builds that need the mirror use the host network.
  PATH="$RSR_DOCKER_HOME/bin:$PATH" setsid "$RSR_DOCKER_HOME/bin/dockerd" \
    --bridge=none --iptables=false --ip-forward=false \
    --registry-mirror="$REGISTRY_MIRROR" \
    --containerd=/run/containerd/containerd.sock \
    >"$RSR_DOCKER_HOME/dockerd.log" 2>&1 < /dev/null &
  for _ in $(seq 1 60); do
    if docker info >/dev/null 2>&1; then return; fi
    sleep 1
  done
  echo "dockerd did not answer within 60 s; its log, $RSR_DOCKER_HOME/dockerd.log, ends:"
  tail -20 "$RSR_DOCKER_HOME/dockerd.log"
  exit 1
}

# The dockerd this script started (its binary), if one runs: only that one is ever restarted.
rsr_dockerd_pid() {
  local pid ours; ours="$(readlink -f "$RSR_DOCKER_HOME/bin/dockerd" 2>/dev/null || true)"
  [ -n "$ours" ] || return 0
  for pid in $(pgrep -x dockerd || true); do
    if [ "$(readlink -f "/proc/$pid/exe" 2>/dev/null)" = "$ours" ]; then echo "$pid"; return 0; fi
  done
}

engine_has_mirror() {
  docker info --format '{{json .RegistryConfig.Mirrors}}' 2>/dev/null | grep -qF "${REGISTRY_MIRROR#*://}"
}

stop_rsr_engine() {
  local pid="$1"
  kill "$pid"
  for _ in $(seq 1 60); do
    if ! kill -0 "$pid" 2>/dev/null; then return; fi
    sleep 1
  done
  echo "dockerd ($pid) did not stop within 60 s"; exit 1
}

start_engine() {
  local v missing pid; v="$(engine_version)"
  if [ -n "$v" ] && version_ge "$v" 24.0.6; then
    if engine_has_mirror; then progress_note "docker engine $v is running"; return; fi
    pid="$(rsr_dockerd_pid)"
    if [ -z "$pid" ]; then
      progress_note "docker engine $v is running without the registry mirror (not started by rsr: add \"registry-mirrors\": [\"$REGISTRY_MIRROR\"] to /etc/docker/daemon.json for Docker Hub names through a loopback mirror)"
      return
    fi
    # A restart would kill the running containers of whoever uses the engine now: only an idle
    # engine is restarted, unless RSR_RESTART_ENGINE=1 says so.
    if [ -n "$(docker ps -q 2>/dev/null)" ] && [ "${RSR_RESTART_ENGINE:-0}" != 1 ]; then
      progress_note "docker engine $v is running without --registry-mirror=$REGISTRY_MIRROR; it has running containers, so it is left as it is (when it is idle, rerun this with RSR_RESTART_ENGINE=1)"
      return
    fi
    progress_step "stopping the docker engine (it lacks --registry-mirror=$REGISTRY_MIRROR)" stop_rsr_engine "$pid"
    progress_step "starting the docker engine" launch_engine
    progress_note "docker engine $(engine_version) restarted with the registry mirror"
    return
  fi
  if [ -n "$v" ]; then progress_note "docker engine $v is older than 24.0.6; starting our own"; fi
  missing="$(missing_host_packages)"
  if [ -n "$missing" ]; then
    progress_step "installing containerd, runc, debootstrap, iptables (apt; missing: ${missing% })" \
      install_host_packages
  fi
  if ! trixie_engine_installed; then
    progress_step "fetching dockerd $TRIXIE_DOCKER and compose $TRIXIE_COMPOSE (Debian trixie)" \
      install_trixie_engine
  fi
  progress_step "starting the docker engine" launch_engine
  progress_note "docker engine $(engine_version) started"
}

BASE_IMAGE=debian:bookworm-slim

bootstrap_base_image() {
  local root="$RSR_DOCKER_HOME/bookworm-root"
  rm -rf "$root"
  debootstrap --variant=minbase bookworm "$root" "$MIRROR"
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -c . | docker import - "$BASE_IMAGE"
  rm -rf "$root"
}

ensure_base_image() {
  if docker image inspect "$BASE_IMAGE" >/dev/null 2>&1; then progress_note "$BASE_IMAGE present"; return; fi
  if timeout 60 docker pull -q "$BASE_IMAGE" >>"$RSR_SETUP_LOG" 2>&1; then progress_note "pulled $BASE_IMAGE"; return; fi
  progress_step "no registry: bootstrapping $BASE_IMAGE with debootstrap" bootstrap_base_image
}

# A local image registry (Debian's distribution binary, started on 127.0.0.1 by whoever needs
# it): `rsr images build --push` and its tests push to it on machines without a real registry.
install_local_registry() {
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends docker-registry
  # The package enables a system service; only explicit, loopback-bound starts are wanted.
  if command -v systemctl >/dev/null 2>&1; then systemctl disable --now docker-registry >/dev/null 2>&1 || true; fi
  pkill -x docker-registry >/dev/null 2>&1 || true
}

main() {
  progress_begin setup-docker "${RSR_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/rsr}/setup.log"
  need_root
  start_engine
  local cv; cv="$(compose_version)"
  if { [ -z "$cv" ] || ! version_ge "$cv" 2.21; } && ! trixie_engine_installed; then
    progress_step "fetching compose $TRIXIE_COMPOSE (Debian trixie)" install_trixie_engine
    cv="$(compose_version)"
  fi
  progress_note "docker compose $cv"
  ensure_base_image
  if ! command -v docker-registry >/dev/null 2>&1; then
    progress_step "installing docker-registry (apt; a loopback registry for image pushes)" install_local_registry
  fi
  progress_end "docker ready"
}

main "$@"
