#!/usr/bin/env bash
# Brings up a Docker engine (>= 24) with Compose v2 on a Debian 12 machine that has no
# container registry, and a locally bootstrapped debian:bookworm-slim base image.
# Idempotent: every step is skipped when its result is already there. Uses a registry
# (docker pull) when one is reachable instead of debootstrap.
set -euo pipefail

RSR_DOCKER_HOME="${RSR_DOCKER_HOME:-/var/lib/rsr-docker}"
TRIXIE_DOCKER="26.1.5+dfsg1-9+deb13u1+b1"
TRIXIE_COMPOSE="2.26.1-4"
MIRROR="${RSR_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
log() { printf '[setup-docker] %s\n' "$*" >&2; }

need_root() {
  if [ "$(id -u)" != 0 ]; then
    log "must run as root (installs packages and starts dockerd)"; exit 2
  fi
}

version_ge() { [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -1)" = "$2" ]; }

engine_version() { docker version --format '{{.Server.Version}}' 2>/dev/null || true; }

compose_version() { docker compose version --short 2>/dev/null | sed 's/^v//' || true; }

install_host_packages() {
  local missing=()
  for bin in containerd runc debootstrap iptables; do
    command -v "$bin" >/dev/null 2>&1 || missing+=("$bin")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    log "installing containerd, runc, debootstrap (missing: ${missing[*]})"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      containerd runc debootstrap iptables ca-certificates >/dev/null
  fi
}

install_trixie_engine() {
  # bookworm's dockerd (20.10) and compose v1 are older than Inspect needs; trixie's
  # dockerd and compose binaries run on bookworm's libc, containerd and runc.
  local dockerd_bin="$RSR_DOCKER_HOME/bin/dockerd"
  local compose_bin=/usr/local/lib/docker/cli-plugins/docker-compose
  if [ -x "$dockerd_bin" ] && [ -x "$compose_bin" ]; then return; fi
  log "fetching dockerd $TRIXIE_DOCKER and compose $TRIXIE_COMPOSE from Debian trixie"
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
  apt-get "${opts[@]}" update -qq
  (cd "$work/debs" && apt-get "${opts[@]}" download \
     "docker.io=$TRIXIE_DOCKER" "docker-compose=$TRIXIE_COMPOSE" >/dev/null)
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

start_engine() {
  local v; v="$(engine_version)"
  if [ -n "$v" ] && version_ge "$v" 24.0.6; then log "docker engine $v is running"; return; fi
  if [ -n "$v" ]; then log "docker engine $v is older than 24.0.6; starting our own"; fi
  install_host_packages
  install_trixie_engine
  pgrep -x containerd >/dev/null || (setsid containerd >"$RSR_DOCKER_HOME/containerd.log" 2>&1 &)
  # No bridge network: traffic to private ranges is not allowed here, so sandboxes run with
  # network_mode none and builds that need the mirror use the host network.
  PATH="$RSR_DOCKER_HOME/bin:$PATH" setsid "$RSR_DOCKER_HOME/bin/dockerd" \
    --bridge=none --iptables=false --ip-forward=false \
    --containerd=/run/containerd/containerd.sock \
    >"$RSR_DOCKER_HOME/dockerd.log" 2>&1 < /dev/null &
  for _ in $(seq 1 60); do
    if docker info >/dev/null 2>&1; then log "docker engine $(engine_version) started"; return; fi
    sleep 1
  done
  log "dockerd did not answer within 60 s; see $RSR_DOCKER_HOME/dockerd.log"; tail -20 "$RSR_DOCKER_HOME/dockerd.log" >&2; exit 1
}

ensure_base_image() {
  local image=debian:bookworm-slim
  if docker image inspect "$image" >/dev/null 2>&1; then log "$image present"; return; fi
  if timeout 60 docker pull -q "$image" >/dev/null 2>&1; then log "pulled $image"; return; fi
  log "no registry: bootstrapping $image with debootstrap"
  local root="$RSR_DOCKER_HOME/bookworm-root"
  rm -rf "$root"
  debootstrap --variant=minbase bookworm "$root" "$MIRROR" >"$RSR_DOCKER_HOME/debootstrap.log" 2>&1 \
    || { tail -20 "$RSR_DOCKER_HOME/debootstrap.log" >&2; exit 1; }
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  tar -C "$root" -c . | docker import - "$image" >/dev/null
  rm -rf "$root"
  log "imported $image"
}

main() {
  need_root
  start_engine
  local cv; cv="$(compose_version)"
  if [ -z "$cv" ] || ! version_ge "$cv" 2.21; then
    install_trixie_engine
    cv="$(compose_version)"
  fi
  log "docker compose $cv"
  ensure_base_image
}

main "$@"
